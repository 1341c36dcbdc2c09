//===- NkiTileReuse.cpp - Reuse of dead SBUF tiles in a printed kernel ---===//
//
// The printer gives every value a fresh tile `tN = nl.ndarray((P_TILE, X),
// dtype=D, buffer=nl.sbuf)`. A tile stays allocated while its variable is
// bound, so a long chain would keep every intermediate alive. This pass
// computes each tile's last use in print order (a use inside a loop the
// tile was allocated outside of lasts to that loop's end: the loop reads it
// again), returns a dead tile to a free list keyed by (X, D), and gives a
// later allocation of the same key a free tile whose variable is in scope
// there (allocated in the same block or an enclosing one) instead of a new
// one. A tile read outside the block that allocated it is never freed.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "codegen/nki/NkiTiling.h"

namespace fusec::codegen::nki {
namespace {

bool identChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Calls \p f(begin, length, number) for every `t<digits>` token of \p s.
template <typename F>
void forEachTile(const std::string &s, F f) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != 't' || (i > 0 && identChar(s[i - 1]))) continue;
    size_t j = i + 1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == i + 1 || (j < s.size() && identChar(s[j]))) continue;
    f(i, j - i, std::stoi(s.substr(i + 1, j - i - 1)));
    i = j - 1;
  }
}

int64_t itemBytes(const std::string &dtype) {
  if (dtype == "nl.bfloat16" || dtype == "nl.float16") return 2;
  if (dtype == "nl.uint8" || dtype == "nl.int8") return 1;
  return 4;
}

bool isPrefix(const std::vector<int> &a, const std::vector<int> &b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

int64_t tileAllocationBytes(const std::string &line, int64_t freeTile) {
  static const std::string kMid = " = nl.ndarray((P_TILE, ";
  const size_t ind = line.find_first_not_of(' ');
  if (ind == std::string::npos) return 0;
  const std::string s = line.substr(ind);
  const size_t eq = s.find(kMid);
  if (s.size() < 2 || s[0] != 't' || eq == std::string::npos || s.find("buffer=nl.sbuf)") == std::string::npos ||
      s.find_first_not_of("0123456789", 1) != eq)
    return 0;
  const size_t close = s.find("), dtype=", eq);
  const size_t dEnd = s.find(", buffer=", close);
  if (close == std::string::npos || dEnd == std::string::npos) return 0;
  const std::string width = s.substr(eq + kMid.size(), close - eq - kMid.size());
  return (width != "1" ? freeTile : 1) * itemBytes(s.substr(close + 9, dEnd - close - 9));
}

std::string reuseDeadTiles(const std::string &body, int64_t freeTile, int64_t *peakBytes) {
  std::vector<std::string> lines = absl::StrSplit(body, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  const int n = static_cast<int>(lines.size());
  // Blocks: every line followed by a deeper one opens one; path[i] = the openers
  // enclosing line i, outermost first; blockEnd[opener] = its last line.
  std::vector<std::vector<int>> path(n);
  std::map<int, int> blockEnd;
  std::vector<std::pair<size_t, int>> open;  // (indent, opener line)
  std::vector<size_t> indentOf(n);
  for (int i = 0; i < n; ++i) {
    size_t ind = lines[i].find_first_not_of(' ');
    indentOf[i] = ind == std::string::npos ? lines[i].size() : ind;
  }
  for (int i = 0; i < n; ++i) {
    const size_t ind = indentOf[i];
    while (!open.empty() && open.back().first >= ind) open.pop_back();
    for (const auto &o : open) blockEnd[o.second] = i;
    for (const auto &o : open) path[i].push_back(o.second);
    if (i + 1 < n && indentOf[i + 1] > ind) {  // `for ...:` / `if ...:` (maybe with a comment)
      open.push_back({ind, i});
      blockEnd[i] = i;
    }
  }
  struct Tile {
    int allocLine = -1, last = -1;
    bool pinned = false;  // read outside its block: never freed
    std::string key, dtype;
    bool elem = false;
  };
  std::map<int, Tile> tiles;
  const std::string kMid = " = nl.ndarray((P_TILE, ";
  for (int i = 0; i < n; ++i) {
    const std::string s = lines[i].substr(indentOf[i]);
    size_t eq = s.find(kMid);
    if (s.size() > 1 && s[0] == 't' && eq != std::string::npos && s.find("buffer=nl.sbuf)") != std::string::npos &&
        s.find_first_not_of("0123456789", 1) == eq) {
      Tile &t = tiles[std::stoi(s.substr(1, eq - 1))];
      t.allocLine = t.last = i;
      size_t close = s.find("), dtype=", eq);
      std::string width = s.substr(eq + kMid.size(), close - eq - kMid.size());
      size_t dEnd = s.find(", buffer=", close);
      t.dtype = s.substr(close + 9, dEnd - close - 9);
      t.elem = width != "1";
      t.key = absl::StrCat(width, "|", t.dtype);
      continue;
    }
    forEachTile(lines[i], [&](size_t, size_t, int id) {
      auto it = tiles.find(id);
      if (it == tiles.end()) return;  // not allocated by the printer: leave it
      Tile &t = it->second;
      const std::vector<int> &ap = path[t.allocLine];
      if (!isPrefix(ap, path[i])) {
        t.pinned = true;
        return;
      }
      int end = path[i].size() > ap.size() ? blockEnd[path[i][ap.size()]] : i;
      t.last = std::max(t.last, end);
    });
  }
  std::map<int, std::vector<int>> dying;  // line -> tiles whose last use it is
  for (const auto &[id, t] : tiles)
    if (!t.pinned) dying[t.last].push_back(id);
  std::map<std::string, std::vector<int>> freeList;  // key -> physical tiles
  std::map<int, int> phys;                           // tile -> physical tile
  int64_t bytes = 0;
  std::string out;
  for (int i = 0; i < n; ++i) {
    bool drop = false;
    const std::string s = lines[i].substr(indentOf[i]);
    if (s.size() > 1 && s[0] == 't') {
      size_t eq = s.find(' ');
      if (eq != std::string::npos && s.find_first_not_of("0123456789", 1) == eq) {
        auto it = tiles.find(std::stoi(s.substr(1, eq - 1)));
        if (it != tiles.end() && it->second.allocLine == i) {
          std::vector<int> &fl = freeList[it->second.key];
          for (size_t k = fl.size(); k-- > 0;) {
            if (!isPrefix(path[tiles[fl[k]].allocLine], path[i])) continue;
            phys[it->first] = fl[k];
            fl.erase(fl.begin() + static_cast<std::ptrdiff_t>(k));
            drop = true;
            break;
          }
          if (!drop) {
            phys[it->first] = it->first;
            bytes += (it->second.elem ? freeTile : 1) * itemBytes(it->second.dtype);
          }
        }
      }
    }
    if (!drop) {
      std::string rewritten;
      size_t from = 0;
      const std::string &src = lines[i];
      forEachTile(src, [&](size_t b, size_t len, int id) {
        auto it = phys.find(id);
        if (it == phys.end() || it->second == id) return;
        rewritten += src.substr(from, b - from);
        rewritten += absl::StrCat("t", it->second);
        from = b + len;
      });
      rewritten += src.substr(from);
      out += rewritten;
      out += '\n';
    }
    if (auto d = dying.find(i); d != dying.end())
      for (int id : d->second) freeList[tiles[id].key].push_back(phys.at(id));
  }
  if (peakBytes) *peakBytes = bytes;
  return out;
}

}  // namespace fusec::codegen::nki
