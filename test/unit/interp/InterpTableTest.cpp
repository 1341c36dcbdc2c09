//===- InterpTableTest.cpp - The interpreter has a function for every op --===//
#include "gtest/gtest.h"
#include "interp/Interpreter.h"
#include "ir/OpTable.h"

namespace fusec::interp {
namespace {

// Interpreter.cpp's familyOf() switch makes every row of ir/Ops.def choose an
// interp/ops file at compile time; this checks that the file registered it.
TEST(InterpTable, EveryOpHasAReferenceFunction) {
  for (const ir::OpInfo &op : ir::allOps()) EXPECT_TRUE(supports(op.kind)) << op.name;
  EXPECT_FALSE(supports(ir::OpKind::kUnregistered));
}

}  // namespace
}  // namespace fusec::interp
