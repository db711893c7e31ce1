// Helpers of the reports tests: reading fixtures and goldens, and a small HTML/SVG element scanner
// (enough to find elements by tag, class and attribute and walk up to their ancestors; no DOM library).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "pipelab/base/file_io.h"
#include "pipelab/reports/result.h"

namespace pipelab::reports::testing {

inline std::string data_path(const std::string& name) { return std::string(PIPELAB_TEST_DATA_DIR) + "/reports/" + name; }

inline std::string read_text(const std::string& path) { return read_text_file(path, "test file"); }

inline ReportInput fixture(const std::string& name) { return load_result_file(data_path(name)); }

inline bool update_golden() {
  const char* v = std::getenv("PIPELAB_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

/// Compares `actual` with the golden file tests/data/reports/<name>, or rewrites it when
/// PIPELAB_UPDATE_GOLDEN=1.
inline void expect_golden(const std::string& actual, const std::string& name) {
  const std::string path = data_path(name);
  if (update_golden()) {
    write_text_file(path, actual, "golden file");
    std::cout << "updated " << path << "\n";
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << "missing golden file " << path
                                             << " (run with PIPELAB_UPDATE_GOLDEN=1 to create it)";
  EXPECT_EQ(actual, read_text(path)) << "differs from " << path
                                     << " (if the change is intended: PIPELAB_UPDATE_GOLDEN=1 ./pipelab_reports_tests)";
}

struct Element {
  std::string tag;
  std::map<std::string, std::string> attrs;
  int parent = -1;
  std::string text;  // direct text content

  bool has_class(const std::string& c) const {
    auto it = attrs.find("class");
    if (it == attrs.end()) return false;
    std::istringstream ss(it->second);
    std::string w;
    while (ss >> w) if (w == c) return true;
    return false;
  }
  std::string attr(const std::string& k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? std::string() : it->second;
  }
};

/// Scans well-formed HTML (ours, or Chromium's --dump-dom serialisation) into elements with parent
/// links. Skips comments, doctype, and the contents of <style> and <script>.
inline std::vector<Element> scan_html(const std::string& html) {
  static const char* const kVoid[] = {"meta", "link", "br", "hr", "img", "input", "area", "base", "col", "wbr", "source"};
  std::vector<Element> out;
  std::vector<int> stack;
  std::size_t i = 0;
  while (i < html.size()) {
    const std::size_t lt = html.find('<', i);
    if (!stack.empty()) out[static_cast<std::size_t>(stack.back())].text += html.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (lt == std::string::npos) break;
    if (html.compare(lt, 4, "<!--") == 0) {
      i = html.find("-->", lt);
      i = i == std::string::npos ? html.size() : i + 3;
      continue;
    }
    if (html.compare(lt, 2, "<!") == 0) {
      i = html.find('>', lt) + 1;
      continue;
    }
    if (html.compare(lt, 2, "</") == 0) {
      const std::size_t gt = html.find('>', lt);
      const std::string name = html.substr(lt + 2, gt - lt - 2);
      // Pop to the matching open element.
      for (int k = static_cast<int>(stack.size()) - 1; k >= 0; --k) {
        if (out[static_cast<std::size_t>(stack[static_cast<std::size_t>(k)])].tag == name) {
          stack.resize(static_cast<std::size_t>(k));
          break;
        }
      }
      i = gt + 1;
      continue;
    }
    // Start tag.
    std::size_t p = lt + 1;
    Element e;
    while (p < html.size() && !isspace(static_cast<unsigned char>(html[p])) && html[p] != '>' && html[p] != '/') e.tag += html[p++];
    bool self_closing = false;
    while (p < html.size() && html[p] != '>') {
      if (isspace(static_cast<unsigned char>(html[p]))) { ++p; continue; }
      if (html[p] == '/') { self_closing = true; ++p; continue; }
      std::string name;
      while (p < html.size() && html[p] != '=' && html[p] != '>' && html[p] != '/' && !isspace(static_cast<unsigned char>(html[p]))) name += html[p++];
      std::string value;
      if (p < html.size() && html[p] == '=') {
        ++p;
        if (html[p] == '"' || html[p] == '\'') {
          const char q = html[p++];
          const std::size_t end = html.find(q, p);
          value = html.substr(p, end - p);
          p = end + 1;
        } else {
          while (p < html.size() && !isspace(static_cast<unsigned char>(html[p])) && html[p] != '>') value += html[p++];
        }
      }
      e.attrs[name] = value;
    }
    i = p + 1;
    e.parent = stack.empty() ? -1 : stack.back();
    out.push_back(e);
    const int idx = static_cast<int>(out.size()) - 1;
    bool is_void = self_closing;
    for (const char* v : kVoid) is_void = is_void || e.tag == v;
    if (e.tag == "style" || e.tag == "script") {
      const std::string close = "</" + e.tag + ">";
      const std::size_t end = html.find(close, i);
      out.back().text = html.substr(i, end - i);
      i = end + close.size();
      continue;
    }
    if (!is_void) stack.push_back(idx);
  }
  return out;
}

/// The nearest ancestor of element `i` matching tag and class, or -1.
inline int ancestor(const std::vector<Element>& els, int i, const std::string& tag, const std::string& cls) {
  for (int p = els[static_cast<std::size_t>(i)].parent; p >= 0; p = els[static_cast<std::size_t>(p)].parent) {
    if (els[static_cast<std::size_t>(p)].tag == tag && els[static_cast<std::size_t>(p)].has_class(cls)) return p;
  }
  return -1;
}

/// Elements with a tag and class.
inline std::vector<int> select(const std::vector<Element>& els, const std::string& tag, const std::string& cls) {
  std::vector<int> out;
  for (std::size_t i = 0; i < els.size(); ++i) {
    if (els[i].tag == tag && (cls.empty() || els[i].has_class(cls))) out.push_back(static_cast<int>(i));
  }
  return out;
}

/// (schedule, source, rank) -> number of rect.action boxes, from svg.timeline > g.rank > rect.action.
inline std::map<std::tuple<std::string, std::string, int>, int> boxes_per_rank(const std::vector<Element>& els) {
  std::map<std::tuple<std::string, std::string, int>, int> out;
  for (int i : select(els, "rect", "action")) {
    const int g = ancestor(els, i, "g", "rank");
    const int svg = ancestor(els, i, "svg", "timeline");
    if (g < 0 || svg < 0) continue;
    const Element& ge = els[static_cast<std::size_t>(g)];
    out[{els[static_cast<std::size_t>(svg)].attr("data-schedule"), ge.attr("data-source"), std::stoi(ge.attr("data-rank"))}]++;
  }
  return out;
}

}  // namespace pipelab::reports::testing
