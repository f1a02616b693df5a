// BatchingSink: a ReportSink that queues reports (at most 10,000; beyond, refused at once
// and the agent retries) and records them in batches of up to 256 on a thread of its
// own, answering each report once its batch is recorded. The brake board in the same
// process (`serve`: the HTTP threads never wait for the disk) and the relay to a graph
// builder (report_relay.h) are both one of these with their own `record`.
// Thread-safe; the destructor answers what is still queued with an error.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "reports/report_intake.h"

namespace cincinnati::server {

class BatchingSink final : public ReportSink {
 public:
  // Records a batch: per report, the graph builder's verdict; or why none was recorded.
  using Verdicts = std::vector<reports::ReportVerdict>;
  using Record = std::function<Result<Verdicts>(const std::vector<UpdateReport>& batch, std::stop_token stop)>;
  using Done = std::function<void(Result<reports::ReportVerdict>)>;
  BatchingSink(Record record, std::string busy);
  ~BatchingSink() override;
  void Submit(UpdateReport report, Done done) override;

 private:
  using Waiting = std::pair<UpdateReport, Done>;
  void Work(std::stop_token stop);
  Record record_;
  std::string busy_;  // the error when the queue is full
  std::mutex mu_;
  std::condition_variable_any wake_;
  std::deque<Waiting> queue_;
  std::jthread worker_;
};

}  // namespace cincinnati::server
