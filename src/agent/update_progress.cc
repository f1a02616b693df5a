#include "agent/update_progress.h"

#include <fmt/format.h>

namespace cincinnati::agent {
namespace {
using kube::JsonObject;
using kube::FindMember;
using kube::TextOf;
using kube::IntegerOf;
using kube::BoolOf;

constexpr std::pair<UpdatePhase, std::string_view> kPhases[] = {
    {UpdatePhase::kIdle, "Idle"},           {UpdatePhase::kVerifying, "Verifying"},
    {UpdatePhase::kDownloading, "Downloading"}, {UpdatePhase::kLoading, "Loading"},
    {UpdatePhase::kApplying, "Applying"},   {UpdatePhase::kHandingOver, "HandingOver"},
    {UpdatePhase::kCompleted, "Completed"}, {UpdatePhase::kFailed, "Failed"},
};

}  // namespace

std::string_view UpdatePhaseName(UpdatePhase phase) {
  for (const auto& [p, name] : kPhases) {
    if (p == phase) return name;
  }
  return "Idle";
}

JsonValue ToJson(const UpdateProgress& p) {
  auto s = [](const std::string& v) { return JsonValue(v); };
  // The flat fields of the stored document: empty outside their phase.
  const FailedPhase failed = p.failed() ? *p.failed() : FailedPhase{};
  const HandingOverPhase handing_over = p.handing_over() ? *p.handing_over() : HandingOverPhase{};
  return JsonValue(JsonObject({
      {"phase", JsonValue(std::string(UpdatePhaseName(p.phase)))},
      {"image", s(p.image)},
      {"version", s(p.version)},
      {"force", JsonValue(p.force)},
      {"verified", JsonValue(p.payload.verified)},
      {"acceptedRisks", s(p.payload.accepted_risks)},
      {"payloadDir", s(p.payload.dir)},
      {"runningPayloadDir", s(p.payload.running_dir)},
      {"nextGroup", JsonValue(int64_t(p.applying.next_group))},
      {"groupStarted", s(p.applying.group_started)},
      {"started", s(p.started)},
      {"failedReason", s(failed.reason)},
      {"failedMessage", s(failed.message)},
      {"retryAt", JsonValue(int64_t(failed.retry_at))},
      {"handOverId", s(handing_over.id)},
      {"handOverAttempts", JsonValue(int64_t(p.applying.hand_over_attempts))},
      {"attemptId", s(p.attempt.id)},
      {"fromVersion", s(p.attempt.from_version)},
      {"fromImage", s(p.attempt.from_image)},
      {"attemptChannel", s(p.attempt.channel)},
      {"attemptArch", s(p.attempt.arch)},
      {"degradedSince", s(p.attempt.degraded_since)},
      {"ended", s(p.attempt.ended)},
      {"result", s(p.attempt.result)},
      {"resultComponent", s(p.attempt.result_component)},
      {"resultReason", s(p.attempt.result_reason)},
      {"reported", JsonValue(p.attempt.reported)},
      {"pollReceipt", s(p.attempt.poll_receipt)},
      {"refusalReported", s(p.last_refusal.key)},
      {"refusalReportedAt", JsonValue(int64_t(p.last_refusal.at))},
  }));
}

Result<UpdateProgress> UpdateProgressFromJson(const JsonValue& json) {
  if (!json.is_object()) return Status::InvalidArgument("update progress: not an object");
  UpdateProgress p;
  auto text = [&](const char* key, std::string& out) -> Status {
    const JsonValue* v = FindMember(json, key);
    if (!v) return Status::OK();
    if (!v->is_string()) return Status::InvalidArgument(fmt::format("update progress: {} must be a string", key));
    out = TextOf(*v);
    return Status::OK();
  };
  auto boolean = [&](const char* key, bool& out) -> Status {
    const JsonValue* v = FindMember(json, key);
    if (!v) return Status::OK();
    if (!v->is_bool()) return Status::InvalidArgument(fmt::format("update progress: {} must be a boolean", key));
    out = BoolOf(*v);
    return Status::OK();
  };
  auto integer = [&](const char* key, int64_t& out) -> Status {
    const JsonValue* v = FindMember(json, key);
    if (!v) return Status::OK();
    if (!IntegerOf(*v)) return Status::InvalidArgument(fmt::format("update progress: {} must be an integer", key));
    out = *IntegerOf(*v);
    return Status::OK();
  };
  std::string phase;
  CINCINNATI_RETURN_IF_ERROR(text("phase", phase));
  bool known = phase.empty();
  for (const auto& [value, name] : kPhases) {
    if (name == phase) p.phase = value, known = true;
  }
  if (!known) return Status::InvalidArgument(fmt::format("update progress: unknown phase \"{}\"", phase));
  CINCINNATI_RETURN_IF_ERROR(text("image", p.image));
  CINCINNATI_RETURN_IF_ERROR(text("version", p.version));
  CINCINNATI_RETURN_IF_ERROR(boolean("force", p.force));
  CINCINNATI_RETURN_IF_ERROR(boolean("verified", p.payload.verified));
  CINCINNATI_RETURN_IF_ERROR(text("acceptedRisks", p.payload.accepted_risks));
  CINCINNATI_RETURN_IF_ERROR(text("payloadDir", p.payload.dir));
  CINCINNATI_RETURN_IF_ERROR(text("runningPayloadDir", p.payload.running_dir));
  CINCINNATI_RETURN_IF_ERROR(integer("nextGroup", p.applying.next_group));
  CINCINNATI_RETURN_IF_ERROR(text("groupStarted", p.applying.group_started));
  CINCINNATI_RETURN_IF_ERROR(text("started", p.started));
  FailedPhase failed;
  HandingOverPhase handing_over;
  CINCINNATI_RETURN_IF_ERROR(text("failedReason", failed.reason));
  CINCINNATI_RETURN_IF_ERROR(text("failedMessage", failed.message));
  CINCINNATI_RETURN_IF_ERROR(integer("retryAt", failed.retry_at));
  CINCINNATI_RETURN_IF_ERROR(text("handOverId", handing_over.id));
  // Each phase's own fields go with it; what an older agent left in the others is dropped.
  if (p.phase == UpdatePhase::kFailed) p.phase_data = std::move(failed);
  if (p.phase == UpdatePhase::kHandingOver) p.phase_data = std::move(handing_over);
  CINCINNATI_RETURN_IF_ERROR(integer("handOverAttempts", p.applying.hand_over_attempts));
  const std::pair<const char*, std::string*> attempt[] = {
      {"attemptId", &p.attempt.id},
      {"fromVersion", &p.attempt.from_version},
      {"fromImage", &p.attempt.from_image},
      {"attemptChannel", &p.attempt.channel},
      {"attemptArch", &p.attempt.arch},
      {"degradedSince", &p.attempt.degraded_since},
      {"ended", &p.attempt.ended},
      {"result", &p.attempt.result},
      {"resultComponent", &p.attempt.result_component},
      {"resultReason", &p.attempt.result_reason},
      {"pollReceipt", &p.attempt.poll_receipt},
      {"refusalReported", &p.last_refusal.key}};
  for (const auto& [key, out] : attempt) CINCINNATI_RETURN_IF_ERROR(text(key, *out));
  CINCINNATI_RETURN_IF_ERROR(boolean("reported", p.attempt.reported));
  CINCINNATI_RETURN_IF_ERROR(integer("refusalReportedAt", p.last_refusal.at));
  if (!p.attempt.result.empty() && p.attempt.result != "Completed" && p.attempt.result != "Failed") {
    return Status::InvalidArgument(fmt::format("update progress: unknown result \"{}\"", p.attempt.result));
  }
  if (p.applying.next_group < 0) return Status::InvalidArgument("update progress: nextGroup must not be negative");
  return p;
}

}  // namespace cincinnati::agent
