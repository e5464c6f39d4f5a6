//===- HtmlReport.cpp - solbench: a self-contained HTML report ------------===//
#include "tools/solbench/HtmlReport.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace sol::bench {

namespace {

const char *const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

/// A readable value: 3 significant digits, no exponent for usual sizes.
std::string pretty(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1000 || a == 0)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (a >= 100)
    std::snprintf(buf, sizeof buf, "%.1f", v);
  else if (a >= 1)
    std::snprintf(buf, sizeof buf, "%.2f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// The smallest round number >= v whose fifths are round too.
double niceCeil(double v) {
  if (!(v > 0))
    return 1;
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (m * p >= v * (1 - 1e-12))
      return m * p;
  return 10 * p;
}

// Inside each chart, so that a chart saved on its own looks the same.
const char *const kSvgStyle =
    "<style>text{font-family:system-ui,sans-serif;fill:#222}"
    ".title{font-size:15px;font-weight:600;text-anchor:middle}"
    ".xtick{font-size:12px;text-anchor:middle}"
    ".ytick{font-size:12px;text-anchor:end}.legend{font-size:12px}"
    ".axistitle{font-size:12px;text-anchor:middle;fill:#555}"
    ".grid{stroke:#eee}.axis{stroke:#888}</style>\n";

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double orNaN(const Summary &s, double v) { return s.count ? v : kNaN; }

std::string levelValue(const LevelSpec &s) {
  if (s.kind == LevelSpec::Kind::Concurrency)
    return std::to_string(s.concurrency);
  return std::isinf(s.rate) ? "inf" : cat(s.rate);
}

} // namespace

std::string htmlEscape(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string svgLineChart(const std::string &title, const std::string &xTitle,
                         const std::string &yTitle,
                         const std::vector<std::string> &xs,
                         const std::vector<ChartSeries> &series) {
  const double width = 560, height = 330;
  const double left = 72, right = 16, top = 58, bottom = 52;
  const double plotW = width - left - right, plotH = height - top - bottom;
  double maxV = 0;
  for (const ChartSeries &s : series)
    for (double v : s.values)
      if (std::isfinite(v))
        maxV = std::max(maxV, v);
  const double yMax = niceCeil(maxV * 1.05);
  // Levels are categories (1, 4, 16, 64 are not evenly spaced): each gets
  // an equal band, its point in the middle.
  auto xAt = [&](size_t i) {
    return left + plotW * (static_cast<double>(i) + 0.5) /
                      static_cast<double>(std::max<size_t>(1, xs.size()));
  };
  auto yAt = [&](double v) { return top + plotH * (1 - v / yMax); };

  std::string o =
      cat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", num(width),
          "\" height=\"", num(height), "\" viewBox=\"0 0 ", num(width), " ",
          num(height), "\" role=\"img\" aria-label=\"", htmlEscape(title),
          "\">\n", kSvgStyle);
  o += cat("<text x=\"", num(width / 2), "\" y=\"20\" class=\"title\">",
           htmlEscape(title), "</text>\n");
  // Grid and y ticks.
  const int ticks = 5;
  for (int t = 0; t <= ticks; ++t) {
    const double v = yMax * t / ticks;
    const double y = yAt(v);
    o += cat("<line x1=\"", num(left), "\" y1=\"", num(y), "\" x2=\"",
             num(left + plotW), "\" y2=\"", num(y), "\" class=\"grid\"/>\n");
    // As many decimals as the step needs, the same on every tick.
    const double step = yMax / ticks;
    const int decimals =
        std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
    char label[32];
    std::snprintf(label, sizeof label, "%.*f", decimals, v);
    o += cat("<text x=\"", num(left - 6), "\" y=\"", num(y + 4),
             "\" class=\"ytick\">", label, "</text>\n");
  }
  // X ticks.
  for (size_t i = 0; i < xs.size(); ++i)
    o += cat("<text x=\"", num(xAt(i)), "\" y=\"", num(top + plotH + 18),
             "\" class=\"xtick\">", htmlEscape(xs[i]), "</text>\n");
  o += cat("<line x1=\"", num(left), "\" y1=\"", num(top + plotH), "\" x2=\"",
           num(left + plotW), "\" y2=\"", num(top + plotH),
           "\" class=\"axis\"/>\n");
  o += cat("<line x1=\"", num(left), "\" y1=\"", num(top), "\" x2=\"",
           num(left), "\" y2=\"", num(top + plotH), "\" class=\"axis\"/>\n");
  o += cat("<text x=\"", num(left + plotW / 2), "\" y=\"", num(height - 10),
           "\" class=\"axistitle\">", htmlEscape(xTitle), "</text>\n");
  o += cat("<text transform=\"translate(16 ", num(top + plotH / 2),
           ") rotate(-90)\" class=\"axistitle\">", htmlEscape(yTitle),
           "</text>\n");
  // Series: a polyline through the known points, a dot with a tooltip each.
  for (size_t k = 0; k < series.size(); ++k) {
    const ChartSeries &s = series[k];
    const char *color = kColors[k % std::size(kColors)];
    std::string points;
    for (size_t i = 0; i < s.values.size() && i < xs.size(); ++i)
      if (std::isfinite(s.values[i]))
        points += cat(points.empty() ? "" : " ", num(xAt(i)), ",",
                      num(yAt(s.values[i])));
    o += cat("<polyline fill=\"none\" stroke=\"", color,
             "\" stroke-width=\"2\" points=\"", points, "\"/>\n");
    for (size_t i = 0; i < s.values.size() && i < xs.size(); ++i)
      if (std::isfinite(s.values[i]))
        o += cat("<circle cx=\"", num(xAt(i)), "\" cy=\"",
                 num(yAt(s.values[i])), "\" r=\"3.5\" fill=\"", color,
                 "\"><title>", htmlEscape(s.name), " at ", htmlEscape(xs[i]),
                 ": ", pretty(s.values[i]), "</title></circle>\n");
    // Legend, in a row under the title.
    const double lx = left + static_cast<double>(k) * 130;
    o += cat("<rect x=\"", num(lx),
             "\" y=\"33\" width=\"12\" height=\"12\" "
             "fill=\"",
             color, "\"/>\n");
    o += cat("<text x=\"", num(lx + 17), "\" y=\"43\" class=\"legend\">",
             htmlEscape(s.name), "</text>\n");
  }
  o += "</svg>\n";
  return o;
}

std::string htmlReport(const nlohmann::ordered_json &config,
                       const std::vector<LevelReport> &levels) {
  const bool rate =
      !levels.empty() && levels[0].spec.kind == LevelSpec::Kind::Rate;
  const std::string xTitle = rate ? "request rate (req/s)" : "concurrency";
  std::vector<std::string> xs;
  for (const LevelReport &l : levels)
    xs.push_back(levelValue(l.spec));
  auto values = [&](auto get) {
    std::vector<double> v;
    for (const LevelReport &l : levels)
      v.push_back(get(l));
    return v;
  };
  auto percentiles = [&](const Summary LevelReport::*m) {
    return std::vector<ChartSeries>{
        {"p50",
         values([&](const LevelReport &l) { return orNaN(l.*m, (l.*m).p50); })},
        {"p90",
         values([&](const LevelReport &l) { return orNaN(l.*m, (l.*m).p90); })},
        {"p99", values([&](const LevelReport &l) {
           return orNaN(l.*m, (l.*m).p99);
         })}};
  };

  std::string charts;
  charts += svgLineChart(
      "Throughput", xTitle, "tokens/s", xs,
      {{"output tok/s",
        values([](const LevelReport &l) { return l.outputTokensPerS; })},
       {"total tok/s",
        values([](const LevelReport &l) { return l.totalTokensPerS; })}});
  charts += svgLineChart(
      "Requests per second", xTitle, "requests/s", xs,
      {{"req/s", values([](const LevelReport &l) { return l.requestsPerS; })}});
  charts += svgLineChart("Time to first token", xTitle, "ms", xs,
                         percentiles(&LevelReport::ttft));
  charts += svgLineChart("Time per output token", xTitle, "ms", xs,
                         percentiles(&LevelReport::tpot));
  charts += svgLineChart("Inter-token latency", xTitle, "ms", xs,
                         percentiles(&LevelReport::itl));
  charts += svgLineChart("End-to-end latency", xTitle, "ms", xs,
                         percentiles(&LevelReport::e2e));

  // The table.
  std::string table = "<table>\n<thead><tr><th rowspan=\"2\">" +
                      htmlEscape(rate ? "rate" : "concurrency") +
                      "</th><th rowspan=\"2\">ok</th><th "
                      "rowspan=\"2\">failed</th><th rowspan=\"2\">time "
                      "s</th><th rowspan=\"2\">req/s</th><th "
                      "rowspan=\"2\">out tok/s</th><th rowspan=\"2\">total "
                      "tok/s</th>";
  for (const char *g : {"TTFT (ms)", "TPOT (ms)", "ITL (ms)", "E2E (ms)"})
    table += cat("<th colspan=\"4\">", g, "</th>");
  table += "</tr>\n<tr>";
  for (int g = 0; g < 4; ++g)
    table += "<th>mean</th><th>p50</th><th>p90</th><th>p99</th>";
  table += "</tr></thead>\n<tbody>\n";
  for (const LevelReport &l : levels) {
    table += cat("<tr><td>", htmlEscape(levelValue(l.spec)), "</td><td>",
                 l.completed, "</td><td>", l.failed, "</td><td>",
                 fixed(l.durationS, 2), "</td><td>", fixed(l.requestsPerS, 2),
                 "</td><td>", fixed(l.outputTokensPerS, 1), "</td><td>",
                 fixed(l.totalTokensPerS, 1), "</td>");
    for (const Summary *s : {&l.ttft, &l.tpot, &l.itl, &l.e2e})
      for (double v : {s->mean, s->p50, s->p90, s->p99})
        table += cat("<td>", s->count ? fixed(v, 2) : "-", "</td>");
    table += "</tr>\n";
  }
  table += "</tbody>\n</table>\n";

  std::string failures;
  for (const LevelReport &l : levels)
    for (const auto &[reason, n] : l.failures)
      failures += cat("<li>", htmlEscape(l.spec.label()), ": ", n, " &times; ",
                      htmlEscape(reason), "</li>\n");

  auto str = [&](const char *key) {
    return config.contains(key) && config[key].is_string()
               ? config[key].get<std::string>()
               : std::string();
  };
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
      "charset=\"utf-8\">\n<title>solbench: " +
      htmlEscape(str("model")) +
      "</title>\n<style>\n"
      "body{font-family:system-ui,sans-serif;margin:24px;color:#222}\n"
      "h1{font-size:22px}h2{font-size:18px;margin-top:28px}\n"
      ".charts{display:flex;flex-wrap:wrap;gap:12px}\n"
      "svg{border:1px solid #ddd;background:#fff}\n"
      "table{border-collapse:collapse;font-size:13px}\n"
      "th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}\n"
      "th{background:#f4f4f4;text-align:center}\n"
      "pre{background:#f8f8f8;padding:10px;font-size:12px;overflow:auto}\n"
      "</style>\n</head>\n<body>\n<h1>solbench: " +
      htmlEscape(str("model")) + " at " + htmlEscape(str("url")) + "</h1>\n";
  page += cat("<p>", htmlEscape(str("endpoint")), " endpoint, ",
              htmlEscape(str("workload")), ", ", htmlEscape(str("date")),
              ".</p>\n");
  page += "<div class=\"charts\">\n" + charts + "</div>\n";
  page += "<h2>Results</h2>\n" + table;
  if (!failures.empty())
    page += "<h2>Failures</h2>\n<ul>\n" + failures + "</ul>\n";
  page += "<h2>Configuration</h2>\n<pre>" +
          htmlEscape(config.dump(2, ' ', false,
                                 nlohmann::json::error_handler_t::replace)) +
          "</pre>\n</body>\n</html>\n";
  return page;
}

} // namespace sol::bench
