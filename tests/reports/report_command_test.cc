// `pipelab report` (apps/cmd_report.cc, compiled into this test): format from the extension or
// --format, several inputs side by side, errors for bad input and unknown extensions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "pipelab/base/error.h"
#include "pipelab/reports/render.h"
#include "report_command.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::data_path;
using testing::fixture;
using testing::read_text;

fs::path out_dir() {
  const fs::path dir = fs::path(PIPELAB_BINARY_DIR) / "test-artifacts" / "report-command";
  fs::create_directories(dir);
  return dir;
}

// Parses and runs `pipelab report ARGS...`; returns the exit code and stdout.
std::pair<int, std::string> run_report(std::vector<std::string> args) {
  CLI::App root{"pipelab"};
  root.require_subcommand(1);
  int exit_code = -1;
  app::add_report_command(root, exit_code);
  args.insert(args.begin(), {"pipelab", "report"});
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  ::testing::internal::CaptureStdout();
  try {
    root.parse(static_cast<int>(argv.size()), argv.data());
  } catch (...) {
    ::testing::internal::GetCapturedStdout();
    throw;
  }
  return {exit_code, ::testing::internal::GetCapturedStdout()};
}

TEST(ReportCommand, FormatFromExtension) {
  const fs::path md = out_dir() / "compare.md";
  const auto [code, out] = run_report({data_path("compare_2r_4mb.json"), "--out", md.string()});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, md.string() + "\n");
  EXPECT_EQ(read_text(md.string()), render_markdown({fixture("compare_2r_4mb.json")}));

  const fs::path html = out_dir() / "sub" / "dir" / "report.html";  // parent directories are created
  EXPECT_EQ(run_report({data_path("run_1f1b_2r_3mb.json"), "--out", html.string()}).first, 0);
  EXPECT_EQ(read_text(html.string()), render_html({fixture("run_1f1b_2r_3mb.json")}));

  const fs::path trace = out_dir() / "trace.json";
  EXPECT_EQ(run_report({data_path("simulate_1f1b_2r_3mb.json"), "-o", trace.string()}).first, 0);
  EXPECT_TRUE(nlohmann::json::parse(read_text(trace.string())).contains("traceEvents"));
}

TEST(ReportCommand, SeveralInputsAndExplicitFormat) {
  const fs::path csv = out_dir() / "actions.txt";
  const auto [code, out] = run_report({data_path("simulate_1f1b_2r_3mb.json"), data_path("run_1f1b_2r_3mb.json"),
                                       "--out", csv.string(), "--format", "timeline-csv"});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(read_text(csv.string()),
            render_timeline_csv({fixture("simulate_1f1b_2r_3mb.json"), fixture("run_1f1b_2r_3mb.json")}));
}

TEST(ReportCommand, SameStemsAreLabelledByPath) {
  const fs::path a = out_dir() / "a", b = out_dir() / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  fs::copy_file(data_path("compare_2r_4mb.json"), a / "result.json", fs::copy_options::overwrite_existing);
  fs::copy_file(data_path("compare_2r_4mb.json"), b / "result.json", fs::copy_options::overwrite_existing);
  const fs::path csv = out_dir() / "two.csv";
  EXPECT_EQ(run_report({(a / "result.json").string(), (b / "result.json").string(), "--out", csv.string()}).first, 0);
  const std::string text = read_text(csv.string());
  EXPECT_THAT(text, HasSubstr((a / "result.json").string() + ",compare,gpipe"));
  EXPECT_THAT(text, HasSubstr((b / "result.json").string() + ",compare,gpipe"));
}

TEST(ReportCommand, BadInput) {
  const std::string out = (out_dir() / "bad.html").string();
  try {
    run_report({data_path("make_fixtures.py"), "--out", out});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("make_fixtures.py: not JSON"));
  }
  try {
    run_report({data_path("compare_2r_4mb.json"), "--out", (out_dir() / "report.txt").string()});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--format"));
  }
  EXPECT_THROW(run_report({data_path("compare_2r_4mb.json"), "--out", out, "--format", "pdf"}), CLI::ValidationError);
  EXPECT_THROW(run_report({"--out", out}), CLI::RequiredError);
  EXPECT_THROW(run_report({data_path("compare_2r_4mb.json")}), CLI::RequiredError);
}

}  // namespace
}  // namespace pipelab::reports
