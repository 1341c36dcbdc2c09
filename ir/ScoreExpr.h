//===- ScoreExpr.h - Attention score/mask expression language ---*- C++ -*-===//
//
// The tiny expression language of fusec's FusedAttention op (ir/Ops.def,
// DESIGN.md "Attention rewrite"). One parser, one printer and one evaluator,
// shared by the rewrite (passes/AttentionRewrite.cpp), the reference
// interpreter (interp/ops/Attention.cpp) and the code generators
// (codegen/cuda/Attention.h), which compile the same AST.
//
// Grammar (whitespace is insignificant):
//   expr    ::= or ('?' expr ':' expr)?
//   or      ::= and ('||' and)*
//   and     ::= cmp ('&&' cmp)*
//   cmp     ::= add (('<' | '<=' | '>' | '>=' | '==' | '!=') add)?
//   add     ::= mul (('+' | '-') mul)*
//   mul     ::= unary (('*' | '/') unary)*
//   unary   ::= '-' unary | '!' unary | primary
//   primary ::= number | 'inf' | 'nan' | '(' expr ')'
//             | 'score' | 'b' | 'h' | 'q' | 'k' | 'bias' DIGITS
//             | NAME '[' expr ']'                      (constant table)
//             | FUNC '(' expr (',' expr)* ')'
//   FUNC    ::= tanh exp log abs sqrt (1 arg) | min max (2) | where (3)
//   number  ::= decimal or exponent form, no sign ("30", "0.125", "1e-4")
//
// Variables:
//   score   the scaled product scale * q·k of this (b, h, q, k), f32.
//   b h q k batch, query head, query position and key position (integers).
//   biasN   bias input N read at (b, h, q, k): the input's shape is
//           right-aligned against [B, Hq, Sq, Sk] and broadcast (size-1 or
//           missing dims read index 0). Read as f32 (bool reads 0 or 1).
//   NAME[i] element i of the constant f32 table NAME (the op's attribute
//           "table_NAME"); i is an integer expression, e.g. slope[h].
//
// Types and evaluation: every node is int, float or bool. b/h/q/k, integer
// literals and int (+ - * /) int are int (64-bit two's complement that
// wraps on overflow, never traps: '/' truncates toward zero, x / 0 is 0 and
// INT64_MIN / -1 is INT64_MIN; a float used as an int saturates, NaN is 0). Anything involving a float (score, bias, table, a literal with '.'
// or exponent, inf, nan, the functions) is float and computed in IEEE f32,
// each operation rounded to f32. Comparisons, '&&', '||' and '!' give bool;
// a float or int used as a condition is true when non-zero. A bool used in
// arithmetic is 0 or 1. 'where(c, a, b)' is 'c ? a : b'.
//
// The printer writes the canonical form (fully parenthesised binary ops,
// literals with enough digits to round-trip f32, "-inf"/"inf"/"nan"), which
// parses back to the same AST: the op stores canonical strings.
//
//===----------------------------------------------------------------------===//
#ifndef FUSEC_IR_SCOREEXPR_H
#define FUSEC_IR_SCOREEXPR_H

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace fusec::ir {

class Node;

enum class ScoreOp {
  kConst,   ///< value (float or int, per type)
  kScore,   ///< the scaled score
  kB, kH, kQ, kK,  ///< index variables
  kBias,    ///< bias input `index`
  kTable,   ///< table `name` at operand a
  kNeg, kNot,
  kAdd, kSub, kMul, kDiv,
  kLt, kLe, kGt, kGe, kEq, kNe, kAnd, kOr,
  kSelect,  ///< a ? b : c
  kTanh, kExp, kLog, kAbs, kSqrt,
  kMin, kMax,
};

enum class ScoreType { kInt, kFloat, kBool };

struct ScoreNode {
  ScoreOp op = ScoreOp::kConst;
  ScoreType type = ScoreType::kFloat;
  double value = 0;   ///< kConst (ints are stored exactly, |v| < 2^53)
  int index = 0;      ///< kBias: bias input number
  std::string name;   ///< kTable: table name
  int a = -1, b = -1, c = -1;  ///< operands (node ids, always smaller than this node's id)
};

/// A parsed expression: nodes in post-order, root last. Empty = no expression.
struct ScoreExpr {
  std::vector<ScoreNode> nodes;
  int root = -1;

  bool empty() const { return root < 0; }
  const ScoreNode &node(int id) const { return nodes[id]; }
  /// Canonical text (see file comment); "" for an empty expression.
  std::string str() const;
  /// True if any node is kScore / kBias / kTable / one of b, h, q, k.
  bool usesScore() const;
  bool usesBias() const;
  bool usesTables() const;
  bool usesIndex(ScoreOp var) const;
  /// Highest bias input number used plus one (0 if none).
  int numBiasesUsed() const;
  /// Table names used (sorted, unique).
  std::vector<std::string> tablesUsed() const;
};

/// What an expression may refer to.
struct ScoreExprContext {
  bool allowScore = true;   ///< false for masks
  int numBiases = 0;        ///< bias0 .. bias<numBiases-1>
  bool allowTables = true;  ///< false for masks
  /// Known table names (when non-empty, others are an error).
  std::vector<std::string> tables;
};

/// Parses \p text. Errors: InvalidArgument naming the offset and what was
/// expected, unknown names, wrong arity, depth over 200, nodes over 10000.
/// An empty or all-space text gives an empty expression.
absl::StatusOr<ScoreExpr> parseScoreExpr(const std::string &text, const ScoreExprContext &ctx);

/// Everything one evaluation may read.
struct ScoreEnv {
  float score = 0;
  int64_t b = 0, h = 0, q = 0, k = 0;
  /// Value of bias input i at (b, h, q, k); may be null when no bias is used.
  std::function<float(int)> bias;
  /// Tables by name (missing name or out-of-range index reads NaN).
  const std::map<std::string, std::vector<float>> *tables = nullptr;
};

/// Evaluates \p e (not empty) with the semantics of the file comment and
/// returns the root as a double (bool -> 0/1; floats are f32 values).
double evalScoreExpr(const ScoreExpr &e, const ScoreEnv &env);

/// Canonical text of one f32 literal ("-inf", "0.125", "-3.40282347e+38").
std::string scoreFloatLiteral(float v);

// --- mask structure ---------------------------------------------------------
// Shared by the attention rewrite (which writes masks in this canonical form)
// and the code generators (which skip whole key tiles from it).

/// cq*q + ck*k + c0: an integer expression that is linear in q and k.
struct IndexLinear {
  int64_t cq = 0, ck = 0, c0 = 0;
};

/// Node \p id of \p e as an IndexLinear, or nullopt when it is not an int
/// expression built from q, k, integer literals, unary -, + and -, and *
/// by a constant.
std::optional<IndexLinear> indexLinear(const ScoreExpr &e, int id);

/// A mask conjunct that bounds the diagonal q - k: kUpper keeps k <= q +
/// bound (causal, with a query offset); kWindow keeps q - k < bound.
struct DiagonalBound {
  enum Kind { kUpper, kWindow } kind = kUpper;
  int64_t bound = 0;
};

/// Node \p id as a DiagonalBound: a comparison (<, <=, >, >=, also under
/// '!') of two IndexLinear sides whose difference is +-(q - k) + c; nullopt
/// otherwise.
std::optional<DiagonalBound> diagonalBound(const ScoreExpr &e, int id);

/// The conjuncts of node \p id (the leaves of its '&&' tree), left to right.
std::vector<int> scoreConjuncts(const ScoreExpr &e, int id);

/// When every conjunct of \p mask (not empty) is a DiagonalBound, the
/// interval [lo, hi] of q - k it keeps (lo may exceed hi: nothing kept;
/// an unbounded side is +-2^61); nullopt otherwise. A tile of queries
/// [q0, q1] and keys [k0, k1] is then fully masked when [q0 - k1, q1 - k0]
/// misses it and fully live when it lies inside it.
std::optional<std::pair<int64_t, int64_t>> diagonalInterval(const ScoreExpr &mask);

/// The canonical text of one DiagonalBound, as the rewrite writes masks:
/// "k <= q", "k <= q + 8", "k <= q - 3", "q - k < 4".
std::string diagonalBoundText(const DiagonalBound &d);

/// The attributes of one FusedAttention node (ir/Ops.def), parsed.
struct AttentionAttrs {
  int64_t numHeads = 0;    ///< "num_heads" (0 if absent)
  int64_t kvHeads = 0;     ///< "kv_num_heads" (0 if absent)
  float scale = 1.0f;      ///< "scale"
  ScoreExpr scoreMod;      ///< "score_mod" (may be empty = score)
  ScoreExpr mask;          ///< "mask" (may be empty = none; bool-valued, index-only)
  /// "masked_rows" == "mean": a row whose every x is -inf gives the mean of
  /// V over all keys instead of NaN (ir/Ops.def).
  bool maskedRowsMean = false;
  /// "key_mask": -1 = none, else the bias input N (node input 3 + N) that is
  /// the per-key mask: key k of batch b is kept where biasN[b, k] != 0 (NaN
  /// keeps). Its shape, right-aligned against [B, Hq, Sq, Sk], is 1 at Hq and
  /// Sq (ir/Ops.def).
  int keyMask = -1;
  std::map<std::string, std::vector<float>> tables;  ///< "tables" + "table_NAME"
};

/// Reads and parses \p node's attributes; bias inputs are inputs 3.. .
/// Errors: InvalidArgument for parse errors, a table named but missing, a
/// mask that reads score, biases or tables, masked_rows other than "" or
/// "mean", a key_mask that names no bias input or (when its rank is known)
/// one that is not 1 at the Hq and Sq positions.
absl::StatusOr<AttentionAttrs> readAttentionAttrs(const Node &node);

}  // namespace fusec::ir

#endif  // FUSEC_IR_SCOREEXPR_H
