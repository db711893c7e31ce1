// write_report_from_files (what `pipelab report` does; its flags are covered by tests/apps): format
// from the extension or a name, several inputs side by side, labels by stem or path, errors for
// bad input and unknown extensions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "pipelab/base/error.h"
#include "pipelab/reports/render.h"
#include "pipelab/reports/write.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::data_path;
using testing::fixture;
using testing::read_text;

fs::path out_dir() {
  const fs::path dir = fs::path(PIPELAB_BINARY_DIR) / "test-artifacts" / "report-files";
  fs::create_directories(dir);
  return dir;
}

TEST(WriteReportFromFiles, FormatFromExtension) {
  const fs::path md = out_dir() / "compare.md";
  write_report_from_files({data_path("compare_2r_4mb.json")}, md.string());
  EXPECT_EQ(read_text(md.string()), render_markdown({fixture("compare_2r_4mb.json")}));

  const fs::path html = out_dir() / "sub" / "dir" / "report.html";  // parent directories are created
  write_report_from_files({data_path("run_1f1b_2r_3mb.json")}, html.string(), "auto");
  EXPECT_EQ(read_text(html.string()), render_html({fixture("run_1f1b_2r_3mb.json")}));

  const fs::path trace = out_dir() / "trace.json";
  write_report_from_files({data_path("simulate_1f1b_2r_3mb.json")}, trace.string());
  EXPECT_TRUE(nlohmann::json::parse(read_text(trace.string())).contains("traceEvents"));
}

TEST(WriteReportFromFiles, SeveralInputsAndExplicitFormat) {
  const fs::path csv = out_dir() / "actions.txt";
  write_report_from_files({data_path("simulate_1f1b_2r_3mb.json"), data_path("run_1f1b_2r_3mb.json")}, csv.string(),
                          "timeline-csv");
  EXPECT_EQ(read_text(csv.string()),
            render_timeline_csv({fixture("simulate_1f1b_2r_3mb.json"), fixture("run_1f1b_2r_3mb.json")}));
}

TEST(WriteReportFromFiles, SameStemsAreLabelledByPath) {
  const fs::path a = out_dir() / "a", b = out_dir() / "b";
  fs::create_directories(a);
  fs::create_directories(b);
  fs::copy_file(data_path("compare_2r_4mb.json"), a / "result.json", fs::copy_options::overwrite_existing);
  fs::copy_file(data_path("compare_2r_4mb.json"), b / "result.json", fs::copy_options::overwrite_existing);
  const fs::path csv = out_dir() / "two.csv";
  write_report_from_files({(a / "result.json").string(), (b / "result.json").string()}, csv.string());
  const std::string text = read_text(csv.string());
  EXPECT_THAT(text, HasSubstr((a / "result.json").string() + ",compare,gpipe"));
  EXPECT_THAT(text, HasSubstr((b / "result.json").string() + ",compare,gpipe"));
}

TEST(WriteReportFromFiles, BadInput) {
  const std::string out = (out_dir() / "bad.html").string();
  try {
    write_report_from_files({data_path("README.md")}, out);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("README.md: not JSON"));
  }
  try {
    write_report_from_files({data_path("compare_2r_4mb.json")}, (out_dir() / "report.txt").string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--format"));
  }
  EXPECT_THROW(write_report_from_files({data_path("compare_2r_4mb.json")}, out, "pdf"), InputError);
}

}  // namespace
}  // namespace pipelab::reports
