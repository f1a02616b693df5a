// Signed answers in the services: their settings and the parts they run.
//  - graph-builder and serve number their graphs (signing/graph_generation.h), kept in
//    `signing.state_dir` when set, and send the number with every graph.
//  - graph-builder signs its /graph answers (channel and arch empty), policy-engine and
//    serve every answer from the shared graph, with
//    `signing.keys` (signing/answer_signer.h), valid `signing.validity_secs` (default an
//    hour) after the graph builder last refreshed the graph; a validity under twice
//    the time between refreshes (service.pause_secs; a policy engine's
//    upstream.cincinnati.cache_ttl_secs) is refused, since answers would expire before
//    the next refresh vouched for them again, and so is one over a week (a replay
//    window that long).
#pragma once

#include <memory>

#include "cli/service_flags.h"
#include "cli/settings.h"
#include "core/status.h"
#include "env/clock.h"
#include "signing/answer_signer.h"
#include "signing/graph_generation.h"

namespace cincinnati::cli {

struct SigningParts {
  std::shared_ptr<server::AnswerSigner> signer;          // null: answers go unsigned
  std::shared_ptr<server::GraphGeneration> generations;  // graph builder and serve
};

Result<SigningParts> SetUpSigning(const Settings& s, Role role, env::Clock& clock);

}  // namespace cincinnati::cli
