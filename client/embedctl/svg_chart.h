// A small self-contained SVG line chart (no plotting library on these machines).
#pragma once

#include <string>
#include <vector>

namespace embedding::client {

struct ChartSeries {
  std::string label;
  // One value per x category; NaN leaves a gap.
  std::vector<double> values;
};

// Lines over categorical x labels, with axes, grid, and a legend.
std::string RenderLineChartSvg(const std::string& title, const std::string& x_title,
                               const std::string& y_title, const std::vector<std::string>& x_labels,
                               const std::vector<ChartSeries>& series);

// Charts of RenderLineChartSvg one above the other, as one SVG document.
std::string StackChartsSvg(const std::vector<std::string>& charts);

}  // namespace embedding::client
