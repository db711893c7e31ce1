// A real browser renders the HTML report: headless Chromium (Debian's /usr/bin/chromium, started
// with the flags that keep it off the network) dumps the DOM after scripts ran, and takes a
// screenshot to <build>/test-artifacts/report.png for people to look at. Skips only without chromium.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "pipelab/base/file_io.h"
#include "pipelab/reports/render.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

namespace fs = std::filesystem;
using testing::boxes_per_rank;
using testing::Element;
using testing::fixture;
using testing::scan_html;
using testing::select;

constexpr const char* kChromium = "/usr/bin/chromium";

struct Chromium {
  fs::path profile;
  Chromium() {
    char tmpl[] = "/tmp/pipelab-chromium-XXXXXX";
    const char* dir = mkdtemp(tmpl);
    profile = dir ? dir : "/tmp/pipelab-chromium-profile";
  }
  ~Chromium() {
    std::error_code ec;
    fs::remove_all(profile, ec);
  }
  Chromium(const Chromium&) = delete;
  Chromium& operator=(const Chromium&) = delete;

  // Runs chromium with `args`; returns (exit status, stdout). stderr goes to `log`.
  std::pair<int, std::string> run(const std::string& args, const fs::path& log) const {
    const std::string cmd = std::string("timeout 120 ") + kChromium +
                            " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update --disable-sync"
                            " --disable-dev-shm-usage --hide-scrollbars --user-data-dir=" + profile.string() + " " +
                            args + " 2>" + log.string();
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return {-1, out};
    std::array<char, 65536> buf{};
    std::size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    return {pclose(p), out};
  }
};

fs::path artifacts_dir() {
  const fs::path dir = fs::path(PIPELAB_BINARY_DIR) / "test-artifacts";
  fs::create_directories(dir);
  return dir;
}

TEST(Browser, ChromiumRendersOneRowPerRankAndOneBoxPerAction) {
  if (!fs::exists(kChromium)) {
    GTEST_SKIP() << kChromium << " not found: install Debian's chromium (scripts/install-deps.sh) to run the browser test";
  }
  const std::vector<ReportInput> inputs{fixture("compare_2r_4mb.json")};
  const fs::path dir = artifacts_dir();
  const fs::path html = dir / "report.html";
  write_text_file(html.string(), render_html(inputs), "test report");

  Chromium chromium;
  const auto [status, dom] =
      chromium.run("--virtual-time-budget=2000 --dump-dom file://" + html.string(), dir / "chromium-dump-dom.log");
  ASSERT_EQ(status, 0) << "chromium --dump-dom failed; see " << (dir / "chromium-dump-dom.log");
  ASSERT_FALSE(dom.empty());
  write_text_file((dir / "report.dom.html").string(), dom, "dumped DOM");

  const auto els = scan_html(dom);
  // The inline script ran (it marks <body> when done).
  const auto bodies = select(els, "body", "");
  ASSERT_EQ(bodies.size(), 1u);
  EXPECT_EQ(els[static_cast<std::size_t>(bodies[0])].attr("data-script"), "ready");
  // One timeline per schedule that ran, one row per rank, one box per timeline event.
  const auto svgs = select(els, "svg", "timeline");
  ASSERT_EQ(svgs.size(), 3u);
  for (int svg : svgs) {
    int rows = 0;
    for (int g : select(els, "g", "rank")) rows += testing::ancestor(els, g, "svg", "timeline") == svg ? 1 : 0;
    EXPECT_EQ(rows, 2) << els[static_cast<std::size_t>(svg)].attr("data-schedule");
  }
  std::map<std::tuple<std::string, std::string, int>, int> expected;
  for (const ScheduleResult& s : inputs[0].schedules) {
    for (const TimelineResult& run : s.runs) {
      for (std::size_t r = 0; r < run.timeline.ranks.size(); ++r) {
        expected[{s.schedule, run.source, static_cast<int>(r)}] = static_cast<int>(run.timeline.ranks[r].size());
      }
    }
  }
  EXPECT_EQ(boxes_per_rank(els), expected);
  EXPECT_EQ(select(els, "table", "comparison").size(), 1u);
  EXPECT_EQ(select(els, "li", "failed").size(), 1u);

  // The hover tooltip: a synthetic mouseover on the first box fills #tip with action, start, duration.
  std::string probe = render_html(inputs);
  const std::string hook =
      "<script>(function(){var r=document.querySelector('rect.action');"
      "r.dispatchEvent(new MouseEvent('mouseover',{bubbles:true,clientX:20,clientY:20}));"
      "var t=document.getElementById('tip');document.body.setAttribute('data-tip-text',t.textContent);"
      "document.body.setAttribute('data-tip-shown',t.hidden?'no':'yes');})();</script></body>";
  probe.replace(probe.rfind("</body>"), 7, hook);
  const fs::path probe_html = dir / "report-tooltip-probe.html";
  write_text_file(probe_html.string(), probe, "test report");
  const auto [probe_status, probe_dom] =
      chromium.run("--virtual-time-budget=2000 --dump-dom file://" + probe_html.string(), dir / "chromium-tooltip.log");
  ASSERT_EQ(probe_status, 0);
  const auto probe_els = scan_html(probe_dom);
  const auto probe_body = select(probe_els, "body", "");
  ASSERT_EQ(probe_body.size(), 1u);
  const Element& body = probe_els[static_cast<std::size_t>(probe_body[0])];
  EXPECT_EQ(body.attr("data-tip-shown"), "yes");
  EXPECT_NE(body.attr("data-tip-text").find("0F0"), std::string::npos) << body.attr("data-tip-text");
  EXPECT_NE(body.attr("data-tip-text").find("rank 0"), std::string::npos) << body.attr("data-tip-text");
  EXPECT_NE(body.attr("data-tip-text").find("start"), std::string::npos);
  EXPECT_NE(body.attr("data-tip-text").find("duration  10.000 ms"), std::string::npos) << body.attr("data-tip-text");

  // A screenshot for people to look at.
  const fs::path png = dir / "report.png";
  fs::remove(png);
  const auto shot = chromium.run("--virtual-time-budget=2000 --window-size=1400,2000 --screenshot=" + png.string() +
                                     " file://" + html.string(),
                                 dir / "chromium-screenshot.log");
  EXPECT_EQ(shot.first, 0) << "see " << (dir / "chromium-screenshot.log");
  ASSERT_TRUE(fs::exists(png)) << png;
  EXPECT_GT(fs::file_size(png), 10'000u);
  std::cout << "screenshot: " << png.string() << "\n";
}

}  // namespace
}  // namespace pipelab::reports
