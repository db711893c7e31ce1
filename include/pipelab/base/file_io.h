// Whole-file text I/O with errors that name the file and what it is meant to be. Every module reads
// and writes files through these two, so "cannot read" and "cannot write" mean the same everywhere.
#pragma once

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>

#include "pipelab/base/error.h"
#include "pipelab/base/limits.h"

namespace pipelab {

/// The whole file as bytes. `what` names the file's role in the message ("model file", "profile").
/// Throws InputError when the file cannot be opened or read, or holds more than `max_bytes`
/// (checked before reading a regular file, and while reading anything else, e.g. /dev/zero).
inline std::string read_text_file(const std::string& path, std::string_view what = "file",
                                  std::int64_t max_bytes = limits::kMaxInputFileBytes) {
  const auto too_large = [&](const std::string& size) {
    return InputError(std::string(what) + " '" + path + "' " + size + "; pipelab reads files of at most " + std::to_string(max_bytes) +
                      " bytes");
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError("cannot read " + std::string(what) + " '" + path + "': it is a directory");
  if (std::filesystem::is_regular_file(path, ec)) {
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > static_cast<std::uintmax_t>(max_bytes)) throw too_large("is " + std::to_string(size) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::string reason = std::error_code(errno, std::generic_category()).message();
    throw InputError("cannot open " + std::string(what) + " '" + path + "' (cannot read it: " + reason + ")");
  }
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (static_cast<std::int64_t>(text.size()) > max_bytes) throw too_large("holds more than " + std::to_string(max_bytes) + " bytes");
  }
  if (in.bad()) throw InputError("cannot read " + std::string(what) + " '" + path + "'");
  return text;
}

/// Writes what `fill` puts into the stream to `path`, creating its parent directories first;
/// replaces an existing file. For documents too large to build in memory first. Throws InputError
/// naming the path when a directory cannot be made or the write fails; when `fill` throws, the
/// partial file is removed and the exception goes on.
template <class Fill>
void write_file_streamed(const std::string& path, std::string_view what, Fill&& fill) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) throw InputError("cannot create the directory of " + std::string(what) + " '" + path + "': " + ec.message());
  }
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError("cannot write " + std::string(what) + " '" + path + "'");
  try {
    fill(static_cast<std::ostream&>(out));
  } catch (...) {
    out.close();
    std::error_code ignored;
    std::filesystem::remove(p, ignored);
    throw;
  }
  out.flush();
  if (!out) throw InputError("cannot write " + std::string(what) + " '" + path + "' (disk full?)");
}

/// Writes `text` to `path`, creating its parent directories first; replaces an existing file.
/// Throws InputError naming the path when a directory cannot be made or the write fails.
inline void write_text_file(const std::string& path, std::string_view text, std::string_view what = "file") {
  write_file_streamed(path, what, [&](std::ostream& out) { out.write(text.data(), static_cast<std::streamsize>(text.size())); });
}

}  // namespace pipelab
