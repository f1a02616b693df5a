#include "reports/report_batches.h"

#include <spdlog/spdlog.h>

#include "core/guard.h"

namespace cincinnati::server {
namespace {

constexpr size_t kMaxQueued = 10000;
constexpr size_t kMaxBatch = 256;

}  // namespace

BatchingSink::BatchingSink(Record record, std::string busy)
    : record_(std::move(record)), busy_(std::move(busy)), worker_([this](std::stop_token stop) { Work(stop); }) {}

BatchingSink::~BatchingSink() {
  worker_.request_stop();
  wake_.notify_all();
  worker_.join();
  for (auto& [report, done] : queue_) done(Status::IoError("the service is stopping"));
}

void BatchingSink::Submit(UpdateReport report, Done done) {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() < kMaxQueued) {
      queue_.emplace_back(std::move(report), std::move(done));
      wake_.notify_one();
      return;
    }
  }
  done(Status::IoError(busy_));
}

void BatchingSink::Work(std::stop_token stop) {
  while (true) {
    std::vector<Waiting> batch;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, stop, [this] { return !queue_.empty(); });
      if (stop.stop_requested()) return;  // what is queued is answered by the destructor
      while (!queue_.empty() && batch.size() < kMaxBatch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::vector<UpdateReport> reports;
    reports.reserve(batch.size());
    for (const auto& [report, done] : batch) reports.push_back(report);
    // Nothing thrown (a bad_alloc) leaves the thread: the batch fails and the agents retry.
    Result<Verdicts> verdicts = Status::Internal("not recorded");
    Status ran = Guarded("recording reports", [&] {
      verdicts = record_(reports, stop);
      return Status::OK();
    });
    if (!ran.ok()) verdicts = ran;
    if (verdicts.ok() && verdicts->size() != batch.size()) verdicts = Status::Internal("a batch was answered in part");
    for (size_t i = 0; i < batch.size(); ++i) {
      // One answer that throws (its connection's callback) must not keep the others from theirs.
      if (Status s = Guarded("answering a report", [&] {
            batch[i].second(verdicts.ok() ? Result<reports::ReportVerdict>((*verdicts)[i])
                                          : Result<reports::ReportVerdict>(verdicts.status()));
            return Status::OK();
          });
          !s.ok()) {
        spdlog::warn("{}", s.message());
      }
    }
  }
}

}  // namespace cincinnati::server
