// What/why: see exact_math.hpp.
#include "engine/exact_math.hpp"

#include <ATen/Context.h>

namespace gaccum::engine {

void use_exact_fp32() {
  at::globalContext().setFloat32MatmulPrecision("highest");
  at::globalContext().setAllowTF32CuDNN(false);
}

bool exact_fp32_in_use() {
  return !at::globalContext().allowTF32CuBLAS() && !at::globalContext().allowTF32CuDNN();
}

}  // namespace gaccum::engine
