// Carrier translation unit for the shared LibTorch precompiled header (cmake/GaccumTargets.cmake).
namespace gaccum::detail {
int torch_pch_anchor() { return 0; }
}  // namespace gaccum::detail
