/*===- CHeaderCheck.c - fusert.h must compile as C -===//
 *
 * Compiled as C99 into RuntimeTest, which calls fusertCHeaderCheck() so the
 * C API is exercised from a C translation unit too.
 *
 *===----------------------------------------------------------------------===*/
#include "fusert/fusert.h"

/* Returns 0 if the basic C API answers as documented without a model. */
int fusertCHeaderCheck(void) {
  fusert_model *model = 0;
  fusert_tensor tensor = {"x", FUSERT_F32, 0, 0, 0};
  if (fusert_load(0, &model) != FUSERT_INVALID_ARGUMENT || model != 0)
    return 1;
  if (fusert_last_error()[0] == '\0')
    return 2;
  if (fusert_run(model, &tensor, 1, 0, 0, 0) != FUSERT_INVALID_ARGUMENT)
    return 3;
  if (fusert_dtype_size(FUSERT_BF16) != 2 || fusert_num_outputs(model) != 0)
    return 4;
  fusert_unload(model);
  return 0;
}
