// Whole-file text I/O with errors that name the file and what it is meant to be. Every module reads
// and writes files through these two, so "cannot read" and "cannot write" mean the same everywhere.
#pragma once

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>

#include "pipelab/base/error.h"

namespace pipelab {

/// The whole file as bytes. `what` names the file's role in the message ("model file", "profile").
/// Throws InputError when the file cannot be opened or read.
inline std::string read_text_file(const std::string& path, std::string_view what = "file") {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::string reason = std::error_code(errno, std::generic_category()).message();
    throw InputError("cannot open " + std::string(what) + " '" + path + "' (cannot read it: " + reason + ")");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError("cannot read " + std::string(what) + " '" + path + "'");
  return text.str();
}

/// Writes `text` to `path`, creating its parent directories first; replaces an existing file.
/// Throws InputError naming the path when a directory cannot be made or the write fails.
inline void write_text_file(const std::string& path, std::string_view text, std::string_view what = "file") {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) throw InputError("cannot create the directory of " + std::string(what) + " '" + path + "': " + ec.message());
  }
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError("cannot write " + std::string(what) + " '" + path + "'");
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  if (!out) throw InputError("cannot write " + std::string(what) + " '" + path + "' (disk full?)");
}

}  // namespace pipelab
