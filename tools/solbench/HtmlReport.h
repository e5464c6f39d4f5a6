//===- HtmlReport.h - solbench: a self-contained HTML report ----*- C++ -*-===//
//
// One page that needs no network: inline SVG line charts (throughput, and
// the TTFT, TPOT, ITL and end-to-end latency percentiles, against the
// concurrency or rate), the results table, failures and the configuration.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/solbench/Report.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace sol::bench {

/// One chart's data: a value per level for each series (NaN: none).
struct ChartSeries {
  std::string name;
  std::vector<double> values;
};

/// An SVG line chart of `series` over the x labels `xs` (evenly spaced).
std::string svgLineChart(const std::string &title, const std::string &xTitle,
                         const std::string &yTitle,
                         const std::vector<std::string> &xs,
                         const std::vector<ChartSeries> &series);

/// The whole page.
std::string htmlReport(const nlohmann::ordered_json &config,
                       const std::vector<LevelReport> &levels);

/// Escapes &, <, >, " and ' for HTML text and attributes.
std::string htmlEscape(const std::string &text);

} // namespace sol::bench
