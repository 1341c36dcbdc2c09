//===- fusec-opt.cpp - Run passes on text IR -------------------------------===//
//
// Thin entry point: all logic is in FusecOpt.cpp. A pass registry plugs in
// here by filling PassHooks.
//
//===----------------------------------------------------------------------===//
#include "tools/fusec-opt/FusecOpt.h"

int main(int argc, char **argv) {
  fusec::opt::PassHooks hooks;  // No passes registered yet.
  return fusec::opt::fusecOptMain(argc, argv, hooks);
}
