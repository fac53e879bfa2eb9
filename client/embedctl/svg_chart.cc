#include "client/embedctl/svg_chart.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace embedding::client {
namespace {

constexpr double kWidth = 760, kHeight = 420;
constexpr double kLeft = 70, kRight = 170, kTop = 40, kBottom = 70;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                               "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string Escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string RenderLineChartSvg(const std::string& title, const std::string& x_title,
                               const std::string& y_title, const std::vector<std::string>& x_labels,
                               const std::vector<ChartSeries>& series) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series)
    for (double v : s.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  const double pad = std::max(0.02, (hi - lo) * 0.1);
  lo -= pad;
  hi += pad;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto x_at = [&](size_t i) {
    return kLeft + (x_labels.size() < 2 ? plot_w / 2 : plot_w * i / (x_labels.size() - 1));
  };
  auto y_at = [&](double v) { return kTop + plot_h * (hi - v) / (hi - lo); };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n<text x=\"%.0f\" y=\"22\" font-size=\"15\">%s</text>\n",
      kWidth, kHeight, kLeft, Escape(title));
  for (int t = 0; t <= 5; ++t) {  // horizontal grid and y ticks
    const double v = lo + (hi - lo) * t / 5, y = y_at(v);
    absl::StrAppendFormat(&svg,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3f</text>\n",
                          kLeft, y, kLeft + plot_w, y, kLeft - 6, y + 4, v);
  }
  for (size_t i = 0; i < x_labels.size(); ++i) {
    absl::StrAppendFormat(&svg,
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                          "transform=\"rotate(-35 %.1f %.1f)\">%s</text>\n",
                          x_at(i), kTop + plot_h + 16, x_at(i), kTop + plot_h + 16,
                          Escape(x_labels[i]));
  }
  absl::StrAppendFormat(
      &svg,
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>"
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
      kLeft, kTop, kLeft, kTop + plot_h, kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h);
  absl::StrAppendFormat(&svg, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                        kLeft + plot_w / 2, kHeight - 8, Escape(x_title));
  absl::StrAppendFormat(&svg,
                        "<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" "
                        "transform=\"rotate(-90 16 %.1f)\">%s</text>\n",
                        kTop + plot_h / 2, kTop + plot_h / 2, Escape(y_title));
  for (size_t s = 0; s < series.size(); ++s) {
    const char* color = kColors[s % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string points;
    for (size_t i = 0; i < series[s].values.size() && i < x_labels.size(); ++i) {
      const double v = series[s].values[i];
      if (!std::isfinite(v)) continue;
      absl::StrAppendFormat(&points, "%.1f,%.1f ", x_at(i), y_at(v));
      absl::StrAppendFormat(&svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                            x_at(i), y_at(v), color);
    }
    absl::StrAppendFormat(
        &svg,
        "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n"
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"3\" fill=\"%s\"/>"
        "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
        points, color, kWidth - kRight + 20, kTop + 20 * s + 6, color, kWidth - kRight + 40,
        kTop + 20 * s + 11, Escape(series[s].label));
  }
  return svg + "</svg>\n";
}

std::string StackChartsSvg(const std::vector<std::string>& charts) {
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n", kWidth,
      kHeight * static_cast<double>(charts.size()));
  for (size_t i = 0; i < charts.size(); ++i) {
    // Each chart is an <svg> element; nested, it takes a vertical offset.
    absl::StrAppend(&svg, absl::StrFormat("<svg y=\"%.0f\" ", kHeight * static_cast<double>(i)),
                    charts[i].substr(std::string("<svg ").size()));
  }
  return svg + "</svg>\n";
}

}  // namespace embedding::client
