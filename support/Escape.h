//===- Escape.h - Model-controlled text made safe to print ------*- C++ -*-===//
//
// Names, attribute strings and paths in a model are chosen by whoever wrote
// the model. Before any of them reaches a terminal, a diagnostic, a dump or
// a generated source comment they go through printable(), which keeps the
// text readable but inert:
//   - C0 controls (including ESC, BEL, CR, LF, TAB), DEL and C1 controls
//     (U+0080..U+009F) become \xNN / \u{NNNN};
//   - Unicode bidirectional controls (U+061C, U+200E, U+200F, U+202A..U+202E,
//     U+2066..U+2069; the "Trojan Source" set, CVE-2021-42574) and the line /
//     paragraph separators U+2028, U+2029 become \u{NNNN};
//   - bytes that are not well-formed UTF-8 become \xNN;
//   - a backslash becomes "\\" so that an escaped form cannot be forged.
// Everything else (printable ASCII, other well-formed UTF-8) is kept.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_SUPPORT_ESCAPE_H
#define FUSEC_SUPPORT_ESCAPE_H

#include <cstdint>
#include <string>
#include <string_view>

namespace fusec {

namespace escape_internal {
inline void appendHexByte(std::string &out, unsigned char c) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out.push_back(kHex[c >> 4]);
  out.push_back(kHex[c & 15]);
}
inline void appendCodePoint(std::string &out, uint32_t cp) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\u{";
  bool started = false;
  for (int shift = 20; shift >= 0; shift -= 4) {
    unsigned d = (cp >> shift) & 15;
    if (d || started || shift == 0) {
      out.push_back(kHex[d]);
      started = true;
    }
  }
  out.push_back('}');
}
inline bool isUnsafeCodePoint(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
         cp == 0x2029;
}
}  // namespace escape_internal

/// \returns \p text with every control, bidirectional-control and malformed
/// byte escaped as described at the top of this file. Never fails; the
/// result is valid UTF-8 and contains no byte below 0x20 and no 0x7f.
inline std::string printable(std::string_view text) {
  using namespace escape_internal;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) {
        appendHexByte(out, c);
      } else if (c == '\\') {
        out += "\\\\";
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    // Decode one UTF-8 sequence; anything malformed is escaped byte by byte.
    int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    uint32_t cp = len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    bool ok = len != 0 && i + len <= text.size();
    for (int k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are malformed.
    if (ok) {
      uint32_t minCp = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      if (cp < minCp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) ok = false;
    }
    if (!ok) {
      appendHexByte(out, c);
      ++i;
      continue;
    }
    if (isUnsafeCodePoint(cp)) {
      appendCodePoint(out, cp);
    } else {
      out.append(text.substr(i, static_cast<size_t>(len)));
    }
    i += static_cast<size_t>(len);
  }
  return out;
}

/// printable() for a whole diagnostic that fusec composed: the same
/// escaping, except that the message's own line breaks ('\n') are kept.
/// Names inside the message must already have gone through printable()
/// (which escapes '\n'), so no model text can start a line of its own.
inline std::string printableLines(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    out += printable(text.substr(start, nl - start));
    if (nl == text.size()) break;
    out.push_back('\n');
    start = nl + 1;
  }
  return out;
}

}  // namespace fusec

#endif  // FUSEC_SUPPORT_ESCAPE_H
