// `cincinnati fleet simulate`: N simulated clusters against a real
// update service over HTTP, on a simulated clock the service shares. Either against a
// running service (`--service URL` with its clock flags `--start`, `--time-scale`,
// `--epoch`), or, the common case, against a `cincinnati serve` it starts as its own
// child from `--releases` and `--graph-data` (with the same clock, reports kept in
// OUT/service, brakes per `--brakes`) and stops at the end. Writes versions.csv,
// adoption.csv, adoption.svg and summary.json in `--out`, and prints the summary.
// A running service must take reports from clusters that polled at `from` once
// (--reports.state_dir, --reports.min_poller_age_secs 0, --reports.min_polls 1): the
// simulator sends only the polls that can change what a cluster does.
// Exit codes: 0 done, 1 the run failed, 2 a flag is wrong.
#pragma once

#include <CLI/CLI.hpp>

namespace cincinnati::cli {

void RegisterFleetCommands(CLI::App& app, int& exit_code);

}  // namespace cincinnati::cli
