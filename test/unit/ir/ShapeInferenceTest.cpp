//===- ShapeInferenceTest.cpp - Shape inference of the tricky ops ---------===//
#include "ir/ShapeInference.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/OpTable.h"
#include "ir/Parser.h"
#include "test/unit/ir/TestUtil.h"

namespace fusec::ir {
namespace {

using testing::inferType;

TEST(ShapeInference, BroadcastKeepsSymbols) {
  EXPECT_EQ(inferType("%a: f32[batch,1,4], %b: f32[seq,1]", "%out = \"Add\"(%a, %b)"),
            "f32[batch,seq,4]");
  EXPECT_EQ(inferType("%a: f32[batch,seq], %b: f32[batch,seq]", "%out = \"Mul\"(%a, %b)"),
            "f32[batch,seq]");
  EXPECT_EQ(inferType("%a: f32[n], %b: f32[3]", "%out = \"Sub\"(%a, %b)"), "f32[3]");
  EXPECT_EQ(inferType("%a: f32[n], %b: f32[m]", "%out = \"Sub\"(%a, %b)"), "f32[?]");
  EXPECT_EQ(inferType("%a: f32[?], %b: f32[1]", "%out = \"Sub\"(%a, %b)"), "f32[?]");
  EXPECT_EQ(inferType("%a: f32[2,3], %b: f32[4,3]", "%out = \"Add\"(%a, %b)").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%a: f32[*], %b: f32[4,3]", "%out = \"Add\"(%a, %b)"), "f32[*]");
  EXPECT_EQ(inferType("%a: f32[2,3], %b: f32[3]", "%out = \"Less\"(%a, %b)"), "bool[2,3]");
  EXPECT_EQ(inferType("%c: bool[n,1], %a: f16[1,4], %b: f16[]",
                      "%out = \"Where\"(%c, %a, %b)"),
            "f16[n,4]");
  EXPECT_EQ(inferType("%a: f32[2,1], %b: f32[1,3], %c: f32[3]",
                      "%out = \"Sum\"(%a, %b, %c)"),
            "f32[2,3]");
}

TEST(ShapeInference, UnaryAndCast) {
  EXPECT_EQ(inferType("%a: f32[b,3]", "%out = \"Cast\"(%a) {to = 7}"), "i64[b,3]");
  EXPECT_EQ(inferType("%a: f32[b,3]", "%out = \"IsNaN\"(%a)"), "bool[b,3]");
  EXPECT_EQ(inferType("%a: f32[b,3]", "%out = \"Gelu\"(%a) {approximate = \"tanh\"}"),
            "f32[b,3]");
  EXPECT_EQ(inferType("%a: f32[2]", "%out = \"Cast\"(%a) {to = 99}").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%a: f32[4]", "%out = \"Size\"(%a)"), "i64[]");
  EXPECT_EQ(inferType("%a: f32[4,5]", "%out = \"ArgMax\"(%a) {axis = -1, keepdims = 0}"),
            "i64[4]");
  EXPECT_EQ(inferType("%a: f32[4,5]", "%out = \"ArgMin\"(%a)"), "i64[1,5]");
}

TEST(ShapeInference, MatMul) {
  EXPECT_EQ(inferType("%a: f32[b,1,4,8], %w: f32[h,8,16]", "%out = \"MatMul\"(%a, %w)"),
            "f32[b,h,4,16]");
  EXPECT_EQ(inferType("%a: f32[8], %w: f32[3,8,16]", "%out = \"MatMul\"(%a, %w)"),
            "f32[3,16]");
  EXPECT_EQ(inferType("%a: f32[3,4,8], %w: f32[8]", "%out = \"MatMul\"(%a, %w)"), "f32[3,4]");
  EXPECT_EQ(inferType("%a: f32[8], %w: f32[8]", "%out = \"MatMul\"(%a, %w)"), "f32[]");
  EXPECT_EQ(inferType("%a: f32[4,7], %w: f32[8,2]", "%out = \"MatMul\"(%a, %w)").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%a: f32[s,k], %w: f32[k,2]", "%out = \"MatMul\"(%a, %w)"), "f32[s,2]");
}

TEST(ShapeInference, Gemm) {
  EXPECT_EQ(inferType("%a: f32[4,3], %b: f32[3,5]", "%out = \"Gemm\"(%a, %b)"), "f32[4,5]");
  EXPECT_EQ(inferType("%a: f32[3,4], %b: f32[5,3], %c: f32[5]",
                      "%out = \"Gemm\"(%a, %b, %c) {transA = 1, transB = 1}"),
            "f32[4,5]");
  EXPECT_EQ(inferType("%a: f32[3,4], %b: f32[3,5]", "%out = \"Gemm\"(%a, %b) {transA = 1}"),
            "f32[4,5]");
  EXPECT_EQ(inferType("%a: f32[4,3], %b: f32[4,5]", "%out = \"Gemm\"(%a, %b)").substr(0, 6),
            "error:");
}

TEST(ShapeInference, ConvAndPools) {
  EXPECT_EQ(inferType("%x: f32[n,3,32,32], %w: f32[16,3,3,3]",
                      "%out = \"Conv\"(%x, %w) {pads = [1, 1, 1, 1], strides = [2, 2]}"),
            "f32[n,16,16,16]");
  EXPECT_EQ(inferType("%x: f32[1,3,32,32], %w: f32[8,3,3,3]",
                      "%out = \"Conv\"(%x, %w) {dilations = [2, 2]}"),
            "f32[1,8,28,28]");
  EXPECT_EQ(inferType("%x: f32[1,3,31,31], %w: f32[8,3,3,3]",
                      "%out = \"Conv\"(%x, %w) {auto_pad = \"SAME_UPPER\", strides = [2, 2]}"),
            "f32[1,8,16,16]");
  EXPECT_EQ(inferType("%x: f32[1,4,10], %w: f32[8,2,3]",
                      "%out = \"Conv\"(%x, %w) {auto_pad = \"VALID\", group = 2}"),
            "f32[1,8,8]");
  EXPECT_EQ(inferType("%x: f32[1,4,10], %w: f32[8,3,3]", "%out = \"Conv\"(%x, %w)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[1,3,h,w], %w: f32[8,3,1,1]", "%out = \"Conv\"(%x, %w)"),
            "f32[1,8,h,w]");
  EXPECT_EQ(inferType("%x: f32[1,3,32,32]",
                      "%out = \"MaxPool\"(%x) {kernel_shape = [3, 3], strides = [2, 2]}"),
            "f32[1,3,15,15]");
  EXPECT_EQ(inferType("%x: f32[1,3,32,32]",
                      "%out = \"MaxPool\"(%x) {ceil_mode = 1, kernel_shape = [3, 3], strides = [2, 2]}"),
            "f32[1,3,16,16]");
  EXPECT_EQ(inferType("%x: f32[1,1,5,5]",
                      "%out = \"AveragePool\"(%x) {kernel_shape = [2, 2], pads = [1, 1, 1, 1], strides = [2, 2]}"),
            "f32[1,1,3,3]");
  EXPECT_EQ(inferType("%x: f32[n,c,7,9]", "%out = \"GlobalAveragePool\"(%x)"),
            "f32[n,c,1,1]");
}

TEST(ShapeInference, NormsAndReductions) {
  EXPECT_EQ(inferType("%x: f16[b,s,64], %g: f16[64]",
                      "%out, %m, %r = \"LayerNormalization\"(%x, %g) {axis = -1}", "m"),
            "f32[b,s,1]");
  EXPECT_EQ(inferType("%x: f32[b,s,64]",
                      "%ax = constant i64[1] dense<[1]>\n%out = \"ReduceMean\"(%x, %ax)"),
            "f32[b,1,64]");
  EXPECT_EQ(inferType("%x: f32[b,s,64]",
                      "%ax = constant i64[2] dense<[0, -1]>\n"
                      "%out = \"ReduceSum\"(%x, %ax) {keepdims = 0}"),
            "f32[s]");
  EXPECT_EQ(inferType("%x: f32[b,s,64]", "%out = \"ReduceMax\"(%x) {keepdims = 0}"), "f32[]");
  EXPECT_EQ(inferType("%x: f32[b,s,64]",
                      "%out = \"ReduceMax\"(%x) {noop_with_empty_axes = 1}"),
            "f32[b,s,64]");
  EXPECT_EQ(inferType("%x: f32[b,s,64], %ax: i64[2]",
                      "%out = \"ReduceMin\"(%x, %ax) {keepdims = 0}"),
            "f32[?]");
}

TEST(ShapeInference, TopKHardmaxOneHotScattersBitShift) {
  const char *k3 = "%k = constant i64[1] dense<[3]>\n";
  EXPECT_EQ(inferType("%x: f32[b,100]", std::string(k3) + "%out, %i = \"TopK\"(%x, %k)"), "f32[b,3]");
  EXPECT_EQ(inferType("%x: f32[b,100]", std::string(k3) + "%out, %i = \"TopK\"(%x, %k) {axis = 0}", "i"),
            "i64[3,100]");
  EXPECT_EQ(inferType("%x: f32[4,100], %k: i64[1]", "%out, %i = \"TopK\"(%x, %k)"), "f32[4,?]");
  // k from Shape data keeps its symbol.
  EXPECT_EQ(inferType("%x: f32[n,s]",
                      "%sh = \"Shape\"(%x) {start = 1}\n%out, %i = \"TopK\"(%x, %sh) {axis = 1}"),
            "f32[n,s]");
  EXPECT_EQ(inferType("%x: f32[4,2]", std::string(k3) + "%out, %i = \"TopK\"(%x, %k)").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[]", std::string(k3) + "%out, %i = \"TopK\"(%x, %k)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[b,7]", "%out = \"Hardmax\"(%x) {axis = 1}"), "f32[b,7]");
  EXPECT_EQ(inferType("%x: f32[b,7]", "%out = \"Hardmax\"(%x) {axis = 2}").substr(0, 6), "error:");
  const char *oh = "%d = constant i64[] dense<[10]>\n%v = constant f32[2] dense<[0.0, 1.0]>\n";
  EXPECT_EQ(inferType("%i: i64[b,s]", std::string(oh) + "%out = \"OneHot\"(%i, %d, %v)"), "f32[b,s,10]");
  EXPECT_EQ(inferType("%i: i64[b,s]", std::string(oh) + "%out = \"OneHot\"(%i, %d, %v) {axis = 0}"),
            "f32[10,b,s]");
  EXPECT_EQ(inferType("%i: i64[b], %d: i64[]", "%v = constant f32[2] dense<[0.0, 1.0]>\n"
                                               "%out = \"OneHot\"(%i, %d, %v)"),
            "f32[b,?]");
  EXPECT_EQ(inferType("%i: i64[b], %v: f32[3]", "%d = constant i64[] dense<[4]>\n%out = \"OneHot\"(%i, %d, %v)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%d: f32[b,6,4], %i: i64[b,1,2], %u: f32[b,1,4]",
                      "%out = \"ScatterND\"(%d, %i, %u)"),
            "f32[b,6,4]");
  EXPECT_EQ(inferType("%d: f32[8,6,4], %i: i64[2,1], %u: f32[2,6,5]", "%out = \"ScatterND\"(%d, %i, %u)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%d: f32[8,6], %i: i64[2,4], %u: f32[2,4]",
                      "%out = \"ScatterElements\"(%d, %i, %u) {axis = 1, reduction = \"max\"}"),
            "f32[8,6]");
  EXPECT_EQ(inferType("%d: f32[8,6], %i: i64[2,4], %u: f32[2,4]",
                      "%out = \"ScatterElements\"(%d, %i, %u) {reduction = \"sum\"}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%d: f32[8,6], %i: i64[2,4], %u: f32[2,3]", "%out = \"ScatterElements\"(%d, %i, %u)")
                .substr(0, 6),
            "error:");
  // Constant indices are range-checked.
  EXPECT_EQ(inferType("%d: f32[8,6], %u: f32[1,1]",
                      "%i = constant i64[1,1] dense<[6]>\n%out = \"ScatterElements\"(%d, %i, %u) {axis = 1}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: u8[4], %y: u8[1]", "%out = \"BitShift\"(%x, %y) {direction = \"LEFT\"}"), "u8[4]");
  EXPECT_EQ(inferType("%x: f32[4], %y: f32[1]", "%out = \"BitShift\"(%x, %y) {direction = \"LEFT\"}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: u8[4], %y: u8[1]", "%out = \"BitShift\"(%x, %y) {direction = \"UP\"}").substr(0, 6),
            "error:");
}

TEST(ShapeInference, PRelu) {
  EXPECT_EQ(inferType("%x: f32[n,3,h,w], %s: f32[3,1,1]", "%out = \"PRelu\"(%x, %s)"), "f32[n,3,h,w]");
  EXPECT_EQ(inferType("%x: f32[n,8], %s: f32[1]", "%out = \"PRelu\"(%x, %s)"), "f32[n,8]");
  // Unidirectional: the slope broadcasts to x, never the reverse.
  EXPECT_EQ(inferType("%x: f32[8], %s: f32[2,8]", "%out = \"PRelu\"(%x, %s)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[2,8], %s: f32[3]", "%out = \"PRelu\"(%x, %s)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[2,8], %s: i32[1]", "%out = \"PRelu\"(%x, %s)").substr(0, 6), "error:");
}

TEST(ShapeInference, CumSum) {
  EXPECT_EQ(inferType("%x: i64[b,s]", "%ax = constant i64[] dense<[1]>\n%out = \"CumSum\"(%x, %ax)"),
            "i64[b,s]");
  EXPECT_EQ(inferType("%x: f32[b,s], %ax: i32[]", "%out = \"CumSum\"(%x, %ax) {reverse = 1}"),
            "f32[b,s]");
  EXPECT_EQ(inferType("%x: f32[b,s]", "%ax = constant i64[] dense<[2]>\n%out = \"CumSum\"(%x, %ax)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[b,s]", "%ax = constant i64[2] dense<[0, 1]>\n%out = \"CumSum\"(%x, %ax)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[b,s]", "%ax = constant f32[] dense<[0.0]>\n%out = \"CumSum\"(%x, %ax)")
                .substr(0, 6),
            "error:");
}

TEST(ShapeInference, CumProd) {
  EXPECT_EQ(inferType("%x: i32[b,s]", "%ax = constant i64[] dense<[1]>\n%out = \"CumProd\"(%x, %ax)"),
            "i32[b,s]");
  EXPECT_EQ(inferType("%x: f32[b,s]", "%ax = constant i64[] dense<[-3]>\n%out = \"CumProd\"(%x, %ax)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[]", "%ax = constant i64[] dense<[0]>\n%out = \"CumProd\"(%x, %ax)").substr(0, 6),
            "error:");
}

TEST(ShapeInference, GridSample) {
  EXPECT_EQ(inferType("%x: f32[n,3,h,w], %g: f32[n,7,9,2]", "%out = \"GridSample\"(%x, %g)"), "f32[n,3,7,9]");
  EXPECT_EQ(inferType("%x: f32[2,3,4,5,6], %g: f32[2,1,2,3,3]",
                      "%out = \"GridSample\"(%x, %g) {mode = \"nearest\", padding_mode = \"border\"}"),
            "f32[2,3,1,2,3]");
  // Refused: cubic in 3-D, a grid of the wrong width or rank, a batch
  // mismatch, unknown modes, integer grids.
  for (const char *bad : {"%out = \"GridSample\"(%x5, %g5) {mode = \"cubic\"}",
                          "%out = \"GridSample\"(%x, %g3)",
                          "%out = \"GridSample\"(%x, %g5)",
                          "%out = \"GridSample\"(%x, %gb)",
                          "%out = \"GridSample\"(%x, %g) {mode = \"area\"}",
                          "%out = \"GridSample\"(%x, %g) {padding_mode = \"wrap\"}",
                          "%out = \"GridSample\"(%x, %gi)"})
    EXPECT_EQ(inferType("%x: f32[2,3,4,5], %g: f32[2,6,6,2], %g3: f32[2,6,6,3], %gb: f32[1,6,6,2], "
                        "%x5: f32[2,3,4,5,6], %g5: f32[2,1,2,3,3], %gi: i64[2,6,6,2]",
                        bad)
                  .substr(0, 6),
              "error:")
        << bad;
}

TEST(ShapeInference, RoiAlignCompressNmsDet) {
  EXPECT_EQ(inferType("%x: f32[n,256,h,w], %r: f32[k,4], %b: i64[k]",
                      "%out = \"RoiAlign\"(%x, %r, %b) {output_height = 7, output_width = 5}"),
            "f32[k,256,7,5]");
  EXPECT_EQ(inferType("%x: f32[1,2,8,8], %r: f32[3,5], %b: i64[3]", "%out = \"RoiAlign\"(%x, %r, %b)").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[1,2,8,8], %r: f32[3,4], %b: i64[2]", "%out = \"RoiAlign\"(%x, %r, %b)").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[1,2,8,8], %r: f32[3,4], %b: i64[3]", "%out = \"RoiAlign\"(%x, %r, %b) {mode = \"min\"}")
                .substr(0, 6),
            "error:");
  // Compress: the selected count is unknown at compile time.
  EXPECT_EQ(inferType("%x: f32[3,2], %c: bool[3]", "%out = \"Compress\"(%x, %c) {axis = 0}"), "f32[?,2]");
  EXPECT_EQ(inferType("%x: f32[3,2], %c: bool[3]", "%out = \"Compress\"(%x, %c)"), "f32[?]");
  EXPECT_EQ(inferType("%x: f32[3,2], %c: bool[4]", "%out = \"Compress\"(%x, %c) {axis = 0}").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[3,2], %c: f32[3]", "%out = \"Compress\"(%x, %c) {axis = 0}").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[3,2], %c: bool[3]", "%out = \"Compress\"(%x, %c) {axis = 2}").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%b: f32[1,6,4], %s: f32[1,2,6]", "%out = \"NonMaxSuppression\"(%b, %s)"), "i64[?,3]");
  EXPECT_EQ(inferType("%b: f32[1,6,4], %s: f32[1,2,5]", "%out = \"NonMaxSuppression\"(%b, %s)").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%b: f32[1,6,4], %s: f32[1,2,6]", "%out = \"NonMaxSuppression\"(%b, %s) {center_point_box = 2}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[b,3,3]", "%out = \"Det\"(%x)"), "f32[b]");
  EXPECT_EQ(inferType("%x: f32[2,2]", "%out = \"Det\"(%x)"), "f32[]");
  EXPECT_EQ(inferType("%x: f32[2,3]", "%out = \"Det\"(%x)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: i64[2,2]", "%out = \"Det\"(%x)").substr(0, 6), "error:");
}

TEST(ShapeInference, BitCastCol2ImUnique) {
  // BitCast: same shape, dtype 'to' (ONNX codes: 6 = int32, 10 = float16,
  // 2 = uint8, 9 = bool, 22 = int4, 23 = float4e2m1), equal widths only.
  EXPECT_EQ(inferType("%x: f32[b,3]", "%out = \"BitCast\"(%x) {to = 6}"), "i32[b,3]");
  EXPECT_EQ(inferType("%x: bool[]", "%out = \"BitCast\"(%x) {to = 2}"), "u8[]");
  EXPECT_EQ(inferType("%x: u4[0,5]", "%out = \"BitCast\"(%x) {to = 22}"), "i4[0,5]");
  EXPECT_EQ(inferType("%x: f32[2]", "%out = \"BitCast\"(%x) {to = 10}").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: u8[2]", "%out = \"BitCast\"(%x) {to = 23}").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[2]", "%out = \"BitCast\"(%x) {to = 8}").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[2]", "%out = \"BitCast\"(%x)").substr(0, 6), "error:");
  // Col2Im: constant image / block shapes give the full shape and are checked.
  const char *sh = "%i = constant i64[2] dense<[5, 5]>\n%k = constant i64[2] dense<[1, 5]>\n";
  EXPECT_EQ(inferType("%x: f32[1,5,5]", std::string(sh) + "%out = \"Col2Im\"(%x, %i, %k)"), "f32[1,1,5,5]");
  EXPECT_EQ(inferType("%x: f32[n,10,5]", std::string(sh) + "%out = \"Col2Im\"(%x, %i, %k)"), "f32[n,2,5,5]");
  EXPECT_EQ(inferType("%x: f32[1,6,5]", std::string(sh) + "%out = \"Col2Im\"(%x, %i, %k)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[1,5,4]", std::string(sh) + "%out = \"Col2Im\"(%x, %i, %k)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[1,5,5]", std::string(sh) + "%out = \"Col2Im\"(%x, %i, %k) {strides = [1]}").substr(0, 6),
            "error:");
  // Odd sizes with strides, pads and dilations: (7 + 1 + 1 - 2 * 2 - 1) / 2 + 1 = 3 blocks per axis.
  EXPECT_EQ(inferType("%x: f32[1,9,9]",
                      "%i = constant i64[2] dense<[7, 7]>\n%k = constant i64[2] dense<[3, 3]>\n"
                      "%out = \"Col2Im\"(%x, %i, %k) {dilations = [2, 2], pads = [1, 1, 1, 1], strides = [2, 2]}"),
            "f32[1,1,7,7]");
  // Run-time shapes: the rank from image_shape's length, the dims unknown.
  EXPECT_EQ(inferType("%x: f32[1,5,5], %i: i64[2], %k: i64[2]", "%out = \"Col2Im\"(%x, %i, %k)"), "f32[1,?,?,?]");
  EXPECT_EQ(inferType("%x: f32[1,5,5], %i: i64[2], %k: i64[3]", "%out = \"Col2Im\"(%x, %i, %k)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[1,5], %i: i64[2], %k: i64[2]", "%out = \"Col2Im\"(%x, %i, %k)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[1,5,5], %i: f32[2], %k: i64[2]", "%out = \"Col2Im\"(%x, %i, %k)").substr(0, 6), "error:");
  // Unique: the distinct count is unknown; inverse_indices has one entry per item.
  EXPECT_EQ(inferType("%x: f32[2,3]", "%out = \"Unique\"(%x)"), "f32[?]");
  EXPECT_EQ(inferType("%x: f32[2,3]", "%out, %i, %inv, %c = \"Unique\"(%x)", "inv"), "i64[6]");
  EXPECT_EQ(inferType("%x: f32[2,3]", "%out, %i, %inv, %c = \"Unique\"(%x)", "c"), "i64[?]");
  EXPECT_EQ(inferType("%x: i64[4,b]", "%out, %i, %inv = \"Unique\"(%x) {axis = -2}"), "i64[?,b]");
  EXPECT_EQ(inferType("%x: i64[4,b]", "%out, %i, %inv = \"Unique\"(%x) {axis = 0}", "inv"), "i64[4]");
  EXPECT_EQ(inferType("%x: f32[0]", "%out, %i, %inv = \"Unique\"(%x)", "inv"), "i64[0]");
  EXPECT_EQ(inferType("%x: f32[3]", "%out = \"Unique\"(%x) {axis = 1}").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[3]", "%out = \"Unique\"(%x) {sorted = 2}").substr(0, 6), "error:");
  // TensorScatter: the cache's type; update fits it, write_indices is [batch].
  EXPECT_EQ(inferType("%c: f16[b,8,t,64], %u: f16[b,8,1,64], %w: i64[b]", "%out = \"TensorScatter\"(%c, %u, %w)"),
            "f16[b,8,t,64]");
  EXPECT_EQ(inferType("%c: f32[1,4,5], %u: f32[1,5,5]", "%out = \"TensorScatter\"(%c, %u) {axis = 1}").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%c: f32[1,4,5], %u: f32[1,2,4]", "%out = \"TensorScatter\"(%c, %u) {axis = 1}").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%c: f32[2,4,5], %u: f32[2,2,5]", "%out = \"TensorScatter\"(%c, %u) {axis = 0}").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%c: f32[2,4,5], %u: f32[2,2,5], %w: i64[3]", "%out = \"TensorScatter\"(%c, %u, %w) {axis = 1}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%c: f32[2,4,5], %u: f32[2,2,5]", "%out = \"TensorScatter\"(%c, %u) {mode = \"ring\"}")
                .substr(0, 6),
            "error:");
}

TEST(ShapeInference, Resize) {
  EXPECT_EQ(inferType("%x: f32[n,3,20,30]",
                      "%s = constant f32[4] dense<[1.0, 1.0, 2.0, 1.5]>\n%out = \"Resize\"(%x, _, %s)"),
            "f32[n,3,40,45]");
  EXPECT_EQ(inferType("%x: f32[n,3,h,w]",
                      "%s = constant f32[4] dense<[1.0, 1.0, 2.0, 2.0]>\n%out = \"Resize\"(%x, _, %s)"),
            "f32[n,3,?,?]");
  EXPECT_EQ(inferType("%x: f32[n,3,h,w]",
                      "%z = constant i64[2] dense<[64, 48]>\n"
                      "%out = \"Resize\"(%x, _, _, %z) {axes = [2, 3], mode = \"linear\"}"),
            "f32[n,3,64,48]");
  // keep_aspect_ratio_policy: one scale, lengths rounded half up.
  EXPECT_EQ(inferType("%x: f32[1,3,20,30]",
                      "%z = constant i64[2] dense<[40, 40]>\n"
                      "%out = \"Resize\"(%x, _, _, %z) {axes = [-2, -1], keep_aspect_ratio_policy = \"not_larger\"}"),
            "f32[1,3,27,40]");
  // Scales that arrive at run time: the rank is known, the extents are not.
  EXPECT_EQ(inferType("%x: f32[1,3,20,30], %s: f32[4]", "%out = \"Resize\"(%x, _, %s)"), "f32[?,?,?,?]");
  // Opset 11's empty roi / scales stand for absent inputs.
  EXPECT_EQ(inferType("%x: f32[1,3,20,30]",
                      "%r = constant f32[0] dense<[]>\n%e = constant f32[0] dense<[]>\n"
                      "%z = constant i64[4] dense<[1, 3, 10, 15]>\n%out = \"Resize\"(%x, %r, %e, %z)"),
            "f32[1,3,10,15]");
  EXPECT_EQ(inferType("%x: f32[1,3,20,30]",
                      "%s = constant f32[4] dense<[1.0, 1.0, 2.0, 2.0]>\n"
                      "%z = constant i64[4] dense<[1, 3, 10, 15]>\n%out = \"Resize\"(%x, _, %s, %z)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[1,3,20,30]",
                      "%s = constant f32[4] dense<[1.0, 1.0, 2.0, 2.0]>\n"
                      "%out = \"Resize\"(%x, _, %s) {mode = \"area\"}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[1,3,20,30]",
                      "%s = constant f32[3] dense<[1.0, 2.0, 2.0]>\n%out = \"Resize\"(%x, _, %s)")
                .substr(0, 6),
            "error:");
}

TEST(ShapeInference, ConvTranspose) {
  EXPECT_EQ(inferType("%x: f32[n,64,h,w], %w: f32[64,32,2,2]",
                      "%out = \"ConvTranspose\"(%x, %w) {strides = [2, 2]}"),
            "f32[n,32,?,?]");
  EXPECT_EQ(inferType("%x: f32[1,64,40,40], %w: f32[64,32,2,2], %b: f32[32]",
                      "%out = \"ConvTranspose\"(%x, %w, %b) {strides = [2, 2]}"),
            "f32[1,32,80,80]");
  EXPECT_EQ(inferType("%x: f32[1,4,5,7], %w: f32[4,3,3,3]",
                      "%out = \"ConvTranspose\"(%x, %w) {group = 2, output_padding = [1, 1], pads = [1, 1, 1, 1], strides = [2, 2]}"),
            "f32[1,6,10,14]");
  EXPECT_EQ(inferType("%x: f32[1,4,5,7], %w: f32[4,1,3,3]",
                      "%out = \"ConvTranspose\"(%x, %w) {auto_pad = \"SAME_LOWER\", group = 4, strides = [3, 2]}"),
            "f32[1,4,15,14]");
  EXPECT_EQ(inferType("%x: f32[1,2,9], %w: f32[2,3,4]",
                      "%out = \"ConvTranspose\"(%x, %w) {output_shape = [1, 3, 21], strides = [2]}"),
            "f32[1,3,21]");
  EXPECT_EQ(inferType("%x: f32[1,4,5], %w: f32[3,1,3]", "%out = \"ConvTranspose\"(%x, %w)").substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[1,4,5], %w: f32[4,1,3], %b: f32[2]", "%out = \"ConvTranspose\"(%x, %w, %b)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[1,4,5], %w: f32[4,1,3]", "%out = \"ConvTranspose\"(%x, %w) {pads = [4, 4]}")
                .substr(0, 6),
            "error:");
}

TEST(ShapeInference, Reshape) {
  EXPECT_EQ(inferType("%x: f32[b,s,768]",
                      "%sh = constant i64[4] dense<[0, 0, 12, -1]>\n%out = \"Reshape\"(%x, %sh)"),
            "f32[b,s,12,64]");
  EXPECT_EQ(inferType("%x: f32[2,3,4]",
                      "%sh = constant i64[2] dense<[-1, 4]>\n%out = \"Reshape\"(%x, %sh)"),
            "f32[6,4]");
  EXPECT_EQ(inferType("%x: f32[b,s,4]",
                      "%sh = constant i64[2] dense<[-1, 4]>\n%out = \"Reshape\"(%x, %sh)"),
            "f32[?,4]");
  EXPECT_EQ(inferType("%x: f32[b,12,64]",
                      "%sh = constant i64[2] dense<[-1, 768]>\n%out = \"Reshape\"(%x, %sh)"),
            "f32[b,768]");
  EXPECT_EQ(inferType("%x: f32[2,3]",
                      "%sh = constant i64[2] dense<[0, 0]>\n"
                      "%out = \"Reshape\"(%x, %sh) {allowzero = 1}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[2,3]",
                      "%sh = constant i64[2] dense<[4, -1]>\n%out = \"Reshape\"(%x, %sh)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[2,3], %sh: i64[3]", "%out = \"Reshape\"(%x, %sh)"),
            "f32[?,?,?]");
  // A target shape whose element count overflows int64 (found by fuzzing:
  // 15 * INT64_MAX) is an error, not undefined behaviour.
  EXPECT_EQ(inferType("%x: f32[2,3]",
                      "%sh = constant i64[3] dense<[15, 9223372036854775807, -1]>\n"
                      "%out = \"Reshape\"(%x, %sh)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[2,3]",
                      "%sh = constant i64[2] dense<[4294967296, 4294967296]>\n"
                      "%out = \"Reshape\"(%x, %sh)")
                .substr(0, 6),
            "error:");
}

TEST(ShapeInference, SliceWithStepsOfExtremeMagnitude) {
  // Steps of +-INT64_MAX / INT64_MIN select one element (they overflowed
  // the count before); starts before the axis clamp to 0 for negative steps.
  const std::string x = "%x: f32[2,4]";
  auto slice = [&](const char *s, const char *e, const char *st) {
    return inferType(x, absl::StrCat("%s = constant i64[1] dense<[", s, "]>\n%e = constant i64[1] dense<[", e,
                                     "]>\n%a = constant i64[1] dense<[1]>\n%t = constant i64[1] dense<[", st,
                                     "]>\n%out = \"Slice\"(%x, %s, %e, %a, %t)"));
  };
  const char *kMax = "9223372036854775807", *kMin = "-9223372036854775808";
  EXPECT_EQ(slice("0", kMax, kMax), "f32[2,1]");
  EXPECT_EQ(slice("-1", kMin, kMin), "f32[2,1]");
  EXPECT_EQ(slice(kMax, kMin, kMin), "f32[2,1]");
  EXPECT_EQ(slice(kMin, kMax, kMax), "f32[2,1]");
  EXPECT_EQ(slice(kMin, kMin, kMin), "f32[2,1]");
  EXPECT_EQ(slice("1", "3", "1"), "f32[2,2]");
}

TEST(ShapeInference, ReshapeOfShapeDerivedValueIsSymbolic) {
  // Shape(x)[0:2] ++ [12, 64]: the typical attention head split.
  EXPECT_EQ(inferType("%x: f32[batch,seq,768]",
                      "%shape = \"Shape\"(%x)\n"
                      "%st = constant i64[1] dense<[0]>\n"
                      "%en = constant i64[1] dense<[2]>\n"
                      "%bs = \"Slice\"(%shape, %st, %en)\n"
                      "%heads = constant i64[2] dense<[12, 64]>\n"
                      "%target = \"Concat\"(%bs, %heads) {axis = 0}\n"
                      "%out = \"Reshape\"(%x, %target)"),
            "f32[batch,seq,12,64]");
  // Gather of single dims, Unsqueeze, Concat, then Expand and ConstantOfShape.
  std::string stmts =
      "%shape = \"Shape\"(%x)\n"
      "%i1 = constant i64[] dense<[1]>\n"
      "%d1 = \"Gather\"(%shape, %i1) {axis = 0}\n"
      "%ax = constant i64[1] dense<[0]>\n"
      "%u1 = \"Unsqueeze\"(%d1, %ax)\n"
      "%t = \"Concat\"(%u1, %u1) {axis = 0}\n"
      "%out = \"ConstantOfShape\"(%t) {value = dense<f16[1] [0.0]>}\n"
      "%e = \"Expand\"(%y, %t)\n"
      "%r = \"Range\"(%zero, %d1, %one)";
  std::string inputs = "%x: f32[batch,seq], %y: f32[1], %zero: i64[], %one: i64[]";
  EXPECT_EQ(inferType(inputs, stmts), "f16[seq,seq]");
  EXPECT_EQ(inferType(inputs, stmts, "e"), "f32[seq,seq]");
  EXPECT_EQ(inferType(inputs, stmts, "r"), "i64[?]");
  // Shape with start/end.
  EXPECT_EQ(inferType("%x: f32[a,b,c,d]", "%out = \"Shape\"(%x) {end = -1, start = 1}"),
            "i64[2]");
  EXPECT_EQ(inferType("%x: f32[a,b,c,d]", "%out = \"Shape\"(%x) {start = -10}"), "i64[4]");
  EXPECT_EQ(inferType("%x: f32[a,b,c,d], %y: f32[c]",
                      "%s = \"Shape\"(%x) {end = 3, start = 2}\n%out = \"Reshape\"(%y, %s)"),
            "f32[c]");
  EXPECT_EQ(inferType("%x: f32[a,b]",
                      "%s = \"Shape\"(%x)\n%c = \"Cast\"(%s) {to = 6}\n"
                      "%m = constant i32[2] dense<[1, 2]>\n%p = \"Mul\"(%c, %m)\n"
                      "%out = \"ConstantOfShape\"(%p)"),
            "f32[a,?]");
}

TEST(ShapeInference, ExporterShapeArithmetic) {
  // position_ids[:, 0:seq] with seq taken from Shape(input_ids).
  EXPECT_EQ(inferType("%ids: i64[batch,seq], %pos: i64[1,512]",
                      "%shape = \"Shape\"(%ids)\n"
                      "%i = constant i64[1] dense<[1]>\n"
                      "%len = \"Gather\"(%shape, %i) {axis = 0}\n"
                      "%z = constant i64[1] dense<[0]>\n"
                      "%out = \"Slice\"(%pos, %z, %len, %i)"),
            "i64[1,seq]");
  // Expand's target from Where(Equal(shape, -1), ones, shape) (torch export).
  EXPECT_EQ(inferType("%m: bool[batch,1,1,seq], %ids: i64[batch,seq]",
                      "%s = \"Shape\"(%ids)\n"
                      "%i0 = constant i64[1] dense<[0]>\n"
                      "%i1 = constant i64[1] dense<[1]>\n"
                      "%b = \"Gather\"(%s, %i0) {axis = 0}\n"
                      "%l = \"Gather\"(%s, %i1) {axis = 0}\n"
                      "%target = \"Concat\"(%b, %i1, %l, %l) {axis = 0}\n"
                      "%four = constant i64[1] dense<[4]>\n"
                      "%ones = \"ConstantOfShape\"(%four) {value = dense<i64[1] [1]>}\n"
                      "%neg = constant i64[] dense<[-1]>\n"
                      "%mneg = \"Mul\"(%ones, %neg)\n"
                      "%eq = \"Equal\"(%target, %mneg)\n"
                      "%w = \"Where\"(%eq, %ones, %target)\n"
                      "%out = \"Expand\"(%m, %w)"),
            "bool[batch,1,seq,seq]");
}

TEST(ShapeInference, Slice) {
  auto slice = [](const std::string &shape, const std::string &starts, const std::string &ends,
                  const std::string &axes, const std::string &steps) {
    int64_t k = std::count(starts.begin(), starts.end(), ',') + 1;
    std::string n = std::to_string(k);
    std::string s = "%st = constant i64[" + n + "] dense<[" + starts + "]>\n%en = constant i64[" +
                    n + "] dense<[" + ends + "]>\n";
    std::string args = "%x, %st, %en";
    if (!axes.empty()) {
      s += "%ax = constant i64[" + n + "] dense<[" + axes + "]>\n";
      args += ", %ax";
    } else if (!steps.empty()) {
      args += ", _";
    }
    if (!steps.empty()) {
      s += "%sp = constant i64[" + n + "] dense<[" + steps + "]>\n";
      args += ", %sp";
    }
    s += "%out = \"Slice\"(" + args + ")";
    return inferType("%x: f32[" + shape + "]", s);
  };
  EXPECT_EQ(slice("10,20", "1, -5", "-1, 1000", "", ""), "f32[8,5]");
  EXPECT_EQ(slice("10,20", "-100", "100", "-1", ""), "f32[10,20]");
  EXPECT_EQ(slice("10,20", "0", "10", "1", "3"), "f32[10,4]");
  EXPECT_EQ(slice("10,20", "-1", "-100", "0", "-1"), "f32[10,20]");
  EXPECT_EQ(slice("10,20", "9", "0", "0", "-2"), "f32[5,20]");
  EXPECT_EQ(slice("10,20", "5", "2", "0", ""), "f32[0,20]");
  EXPECT_EQ(slice("b,20", "0", "9223372036854775807", "0", ""), "f32[b,20]");
  EXPECT_EQ(slice("b,20", "1", "3", "0", ""), "f32[?,20]");
  EXPECT_EQ(slice("10,20", "0", "1", "2", ""), "error: '' (Slice): axis 2 out of range for rank 2");
}

TEST(ShapeInference, GatherFamily) {
  EXPECT_EQ(inferType("%x: f32[v,768], %i: i64[b,s]", "%out = \"Gather\"(%x, %i)"),
            "f32[b,s,768]");
  EXPECT_EQ(inferType("%x: f32[2,3,4], %i: i64[]", "%out = \"Gather\"(%x, %i) {axis = -2}"),
            "f32[2,4]");
  EXPECT_EQ(inferType("%x: f32[2,3,4], %i: i64[5,3,4]",
                      "%out = \"GatherElements\"(%x, %i) {axis = 0}"),
            "f32[5,3,4]");
  EXPECT_EQ(inferType("%x: f32[2,3,4], %i: i64[2,1]", "%out = \"GatherND\"(%x, %i)"),
            "f32[2,3,4]");
  EXPECT_EQ(inferType("%x: f32[2,3,4], %i: i64[2,2]", "%out = \"GatherND\"(%x, %i)"),
            "f32[2,4]");
  EXPECT_EQ(inferType("%x: f32[2,3,4], %i: i64[2,5,1]",
                      "%out = \"GatherND\"(%x, %i) {batch_dims = 1}"),
            "f32[2,5,4]");
  EXPECT_EQ(inferType("%x: f32[2,3,4], %i: i64[2,3]",
                      "%out = \"GatherND\"(%x, %i) {batch_dims = 1}")
                .substr(0, 6),
            "error:");
}

TEST(ShapeInference, SplitConcat) {
  EXPECT_EQ(inferType("%x: f32[b,10]",
                      "%sp = constant i64[2] dense<[3, 7]>\n"
                      "%a, %out = \"Split\"(%x, %sp) {axis = -1}"),
            "f32[b,7]");
  EXPECT_EQ(inferType("%x: f32[b,10]",
                      "%a, %m, %out = \"Split\"(%x) {axis = 1, num_outputs = 3}"),
            "f32[b,2]");
  EXPECT_EQ(inferType("%x: f32[b,10]",
                      "%a, %m, %out = \"Split\"(%x) {axis = 1, num_outputs = 3}", "a"),
            "f32[b,4]");
  EXPECT_EQ(inferType("%x: f32[b,10]",
                      "%sp = constant i64[2] dense<[3, 8]>\n"
                      "%a, %out = \"Split\"(%x, %sp) {axis = 1}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%a: f32[b,3], %c: f32[b,5]", "%out = \"Concat\"(%a, %c) {axis = 1}"),
            "f32[b,8]");
  EXPECT_EQ(inferType("%a: f32[b,3], %c: f32[s,3]", "%out = \"Concat\"(%a, %c) {axis = 0}"),
            "f32[?,3]");
  EXPECT_EQ(inferType("%a: f32[2,3], %c: f32[2,3,1]", "%out = \"Concat\"(%a, %c) {axis = 0}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%a: f32[2,3], %c: f32[4,3]", "%out = \"Concat\"(%a, %c) {axis = 1}")
                .substr(0, 6),
            "error:");
}

TEST(ShapeInference, SqueezeUnsqueeze) {
  EXPECT_EQ(inferType("%x: f32[1,b,1,4]",
                      "%ax = constant i64[1] dense<[-2]>\n%out = \"Squeeze\"(%x, %ax)"),
            "f32[1,b,4]");
  EXPECT_EQ(inferType("%x: f32[1,b,1,4]", "%out = \"Squeeze\"(%x)"), "f32[b,4]");
  EXPECT_EQ(inferType("%x: f32[1,b,3]",
                      "%ax = constant i64[1] dense<[2]>\n%out = \"Squeeze\"(%x, %ax)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[b,4]",
                      "%ax = constant i64[2] dense<[-1, 0]>\n%out = \"Unsqueeze\"(%x, %ax)"),
            "f32[1,b,4,1]");
  EXPECT_EQ(inferType("%x: f32[b,4]",
                      "%ax = constant i64[2] dense<[1, -3]>\n%out = \"Unsqueeze\"(%x, %ax)")
                .substr(0, 6),
            "error:");
}

TEST(ShapeInference, LayoutOps) {
  EXPECT_EQ(inferType("%x: f32[a,b,c]", "%out = \"Transpose\"(%x)"), "f32[c,b,a]");
  EXPECT_EQ(inferType("%x: f32[a,b,c]", "%out = \"Transpose\"(%x) {perm = [0, 2, 1]}"),
            "f32[a,c,b]");
  EXPECT_EQ(inferType("%x: f32[a,b,c]", "%out = \"Transpose\"(%x) {perm = [0, 0, 1]}")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[2,3,4,5]", "%out = \"Flatten\"(%x) {axis = 2}"), "f32[6,20]");
  EXPECT_EQ(inferType("%x: f32[b,3,4]", "%out = \"Flatten\"(%x)"), "f32[b,12]");
  EXPECT_EQ(inferType("%x: f32[2,3,4]", "%out = \"Flatten\"(%x) {axis = 0}"), "f32[1,24]");
  EXPECT_EQ(inferType("%x: f32[2,3,4]", "%out = \"Flatten\"(%x) {axis = -1}"), "f32[6,4]");
  EXPECT_EQ(inferType("%x: f32[b,s,s]", "%out = \"Trilu\"(%x) {upper = 0}"), "f32[b,s,s]");
  EXPECT_EQ(inferType("%x: f32[4]", "%out = \"Trilu\"(%x)").substr(0, 6), "error:");
  EXPECT_EQ(inferType("%x: f32[b,1,3]",
                      "%sh = constant i64[3] dense<[2, 4, 1]>\n%out = \"Expand\"(%x, %sh)"),
            "f32[2,4,3]");
  EXPECT_EQ(inferType("%x: f32[2,3]",
                      "%sh = constant i64[2] dense<[4, 3]>\n%out = \"Expand\"(%x, %sh)")
                .substr(0, 6),
            "error:");
  EXPECT_EQ(inferType("%x: f32[b,3]",
                      "%r = constant i64[2] dense<[1, 2]>\n%out = \"Tile\"(%x, %r)"),
            "f32[b,6]");
  // A repeat whose product with the dim overflows int64 is an error (it was
  // signed overflow, then an unknown dim and a misleading --shape hint).
  EXPECT_NE(inferType("%x: f32[2,3]",
                      "%r = constant i64[2] dense<[4611686018427387904, 4]>\n%out = \"Tile\"(%x, %r)")
                .find("overflows a 64-bit extent"),
            std::string::npos);
  EXPECT_EQ(inferType("%x: f32[b,3]",
                      "%p = constant i64[4] dense<[0, 1, 0, 2]>\n%out = \"Pad\"(%x, %p)"),
            "f32[b,6]");
  EXPECT_EQ(inferType("%x: f32[2,3,4]",
                      "%p = constant i64[2] dense<[1, 1]>\n%ax = constant i64[1] dense<[-1]>\n"
                      "%out = \"Pad\"(%x, %p, _, %ax) {mode = \"reflect\"}"),
            "f32[2,3,6]");
}

TEST(ShapeInference, RangeAndConstants) {
  auto range = [](const std::string &dt, const std::string &s, const std::string &l,
                  const std::string &d) {
    return inferType("", "%s = constant " + dt + "[] dense<[" + s + "]>\n%l = constant " + dt +
                             "[] dense<[" + l + "]>\n%d = constant " + dt + "[] dense<[" + d +
                             "]>\n%out = \"Range\"(%s, %l, %d)");
  };
  EXPECT_EQ(range("i64", "0", "10", "3"), "i64[4]");
  EXPECT_EQ(range("i64", "10", "0", "-3"), "i64[4]");
  EXPECT_EQ(range("i64", "10", "0", "3"), "i64[0]");
  EXPECT_EQ(range("f32", "0.0", "1.0", "0.25"), "f32[4]");
  EXPECT_EQ(range("i32", "0", "5", "0").substr(0, 6), "error:");
  EXPECT_EQ(inferType("", "%out = \"Constant\"() {value = dense<i32[2,2] [1, 2, 3, 4]>}"),
            "i32[2,2]");
  EXPECT_EQ(inferType("", "%out = \"Constant\"() {value_floats = [1.0, 2.0]}"), "f32[2]");
}

TEST(ShapeInference, UnregisteredOpsKeepTheirTypes) {
  EXPECT_EQ(inferType("%x: f32[2]", "%out = \"test.Foo\"(%x) : f32[7,7]"), "f32[7,7]");
  EXPECT_EQ(inferType("%x: f32[2]", "%out = \"com.microsoft::Gelu\"(%x) : bf16[3]"), "bf16[3]");
}

TEST(ShapeInference, UnknownDimsKeepExistingInformation) {
  // A declared symbol survives when inference can only say "?".
  EXPECT_EQ(inferType("%x: f32[2,3], %sh: i64[2]", "%out = \"Reshape\"(%x, %sh) : f32[n,3]"),
            "f32[n,3]");
}

// Every op of the table, with several input shapes, must infer without
// crashing (errors are fine for inconsistent inputs).
TEST(ShapeInference, EveryOpSmoke) {
  for (const OpInfo &op : allOps()) {
    for (const char *ty : {"f32[2,3,4,5]", "f32[*]", "i64[4]", "f32[]", "f32[b,?,3]"}) {
      int nin = op.maxInputs < 0 ? op.minInputs + 1 : op.maxInputs;
      int nout = op.maxOutputs < 0 ? 2 : op.maxOutputs;
      std::string args, results;
      for (int i = 0; i < nin; ++i) args += i ? ", %x" : "%x";
      for (int i = 0; i < nout; ++i) results += (i ? ", %r" : "%r") + std::to_string(i);
      std::string text = testing::graphText(
          std::string("%x: ") + ty, results + " = \"" + op.name + "\"(" + args + ")", "%r0");
      auto g = parseGraph(text);
      ASSERT_TRUE(g.ok()) << g.status();
      (void)inferShapes(**g);
    }
  }
}

// Issue 10: a declared output type that disagrees with the inferred one is
// a conflict for importers to report, not something to refine silently.
TEST(ShapeInference, DeclaredTypeConflicts) {
  const TensorType f32_2x3(DType::kF32, {Dim(2), Dim(3)});
  EXPECT_TRUE(checkDeclaredType(f32_2x3, f32_2x3, "y").ok());
  EXPECT_TRUE(checkDeclaredType(f32_2x3, TensorType(DType::kF32, {Dim(2), Dim::symbolic("n")}), "y").ok());
  EXPECT_TRUE(checkDeclaredType(f32_2x3, TensorType::unranked(DType::kUndefined), "y").ok());
  EXPECT_TRUE(checkDeclaredType(TensorType(DType::kF32, {Dim(2), Dim::unknown()}), f32_2x3, "y").ok());
  absl::Status s = checkDeclaredType(f32_2x3, TensorType(DType::kI64, {Dim(2), Dim(3)}), "y");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("y is declared i64[2,3] but its op gives f32[2,3]"), std::string::npos) << s;
  EXPECT_FALSE(checkDeclaredType(f32_2x3, TensorType(DType::kF32, {Dim(2)}), "y").ok());
  EXPECT_FALSE(checkDeclaredType(f32_2x3, TensorType(DType::kF32, {Dim(2), Dim(4)}), "y").ok());
}

// Issue 10: types over the tensor size limit are refused by shape inference
// (a 2^40 x 2^40 tensor printed as "0 B"), and mixed operand dtypes by the op
// table's FUSEC_DTYPES rows.
TEST(ShapeInference, SizeCapAndOperandDTypes) {
  EXPECT_NE(inferType("%x: f32[1]", "%s = constant i64[2] dense<[1099511627776, 1099511627776]>\n"
                                    "%out = \"Expand\"(%x, %s)")
                .find("exceeds the tensor size limit"),
            std::string::npos);
  EXPECT_EQ(inferType("%x: f32[1]", "%s = constant i64[2] dense<[1024, 1024]>\n"
                                    "%out = \"Expand\"(%x, %s)"),
            "f32[1024,1024]");
  EXPECT_NE(inferType("%x: f32[2], %y: f16[2]", "%out = \"Mul\"(%x, %y)").find("different dtypes"),
            std::string::npos);
  EXPECT_EQ(inferType("%x: f32[2], %y: i64[2]", "%out = \"Pow\"(%x, %y)"), "f32[2]");
  EXPECT_EQ(inferType("%c: bool[2], %x: i64[2]", "%out = \"Where\"(%c, %x, %x)"), "i64[2]");
}

TEST(OpTable, DTypeRules) {
  EXPECT_FALSE(opInfo(OpKind::kExp).dtypes.empty());
  EXPECT_TRUE(dtypeInClass(DType::kBF16, DTypeClass::kFloat));
  EXPECT_FALSE(dtypeInClass(DType::kBool, DTypeClass::kNumeric));
  EXPECT_TRUE(dtypeInClass(DType::kI32, DTypeClass::kIndex));
  EXPECT_FALSE(dtypeInClass(DType::kU8, DTypeClass::kIndex));
  // Narrow dtypes are storage only: quantised operands and scales, not numbers.
  EXPECT_FALSE(dtypeInClass(DType::kF8E4M3FN, DTypeClass::kFloat));
  EXPECT_FALSE(dtypeInClass(DType::kI4, DTypeClass::kNumeric));
  EXPECT_TRUE(dtypeInClass(DType::kI4, DTypeClass::kQuantized));
  EXPECT_TRUE(dtypeInClass(DType::kF4E2M1, DTypeClass::kQuantized));
  EXPECT_TRUE(dtypeInClass(DType::kU8, DTypeClass::kQuantized));
  EXPECT_TRUE(dtypeInClass(DType::kF8E8M0, DTypeClass::kScale));
  EXPECT_FALSE(dtypeInClass(DType::kF8E4M3FN, DTypeClass::kScale));
}

// Narrow dtypes (ir/DType.h) in shape inference: Cast's 'to', QuantizeLinear
// / DequantizeLinear's result and operand dtypes; arithmetic on them refused.
TEST(ShapeInference, NarrowDTypes) {
  EXPECT_EQ(inferType("%x: f32[3]", "%out = \"Cast\"(%x) {to = 17, saturate = 0}"), "f8e4m3fn[3]");
  EXPECT_EQ(inferType("%x: i4[3]", "%out = \"Cast\"(%x) {to = 1}"), "f32[3]");
  EXPECT_EQ(inferType("%x: f32[2,4], %s: f32[2], %z: u2[2]", "%out = \"QuantizeLinear\"(%x, %s, %z) {axis = 0}"),
            "u2[2,4]");
  EXPECT_EQ(inferType("%x: f32[4], %s: f32[]", "%out = \"QuantizeLinear\"(%x, %s) {output_dtype = 23}"),
            "f4e2m1[4]");
  EXPECT_NE(inferType("%x: f32[4], %s: f32[]", "%out = \"QuantizeLinear\"(%x, %s) {output_dtype = 24}")
                .find("quantising to f8e8m0 is not supported"),
            std::string::npos);
  EXPECT_EQ(inferType("%x: f8e5m2[4], %s: f16[]", "%out = \"DequantizeLinear\"(%x, %s)"), "f16[4]");
  EXPECT_EQ(inferType("%x: i4[2,4], %s: f8e8m0[2,1]",
                      "%out = \"DequantizeLinear\"(%x, %s) {axis = 1, block_size = 4, output_dtype = 1}"),
            "f32[2,4]");
  EXPECT_NE(inferType("%x: i4[4], %s: f8e8m0[]", "%out = \"DequantizeLinear\"(%x, %s)").find("needs output_dtype"),
            std::string::npos);
  EXPECT_NE(inferType("%x: f8e4m3fn[2]", "%out = \"Add\"(%x, %x)").find("f8e4m3fn"), std::string::npos);
  EXPECT_EQ(inferType("%x: i4[2,3]", "%out = \"Transpose\"(%x) {perm = ints[1, 0]}"), "i4[3,2]");
}

}  // namespace
}  // namespace fusec::ir
