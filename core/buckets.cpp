// What/why: see buckets.hpp.
#include "core/buckets.hpp"

namespace gaccum {

std::vector<Bucket> assign_buckets(const std::vector<Bytes>& param_tensor_bytes, Bytes first_cap, Bytes cap) {
  std::vector<Bucket> out;
  Bucket cur;
  for (std::size_t i = param_tensor_bytes.size(); i-- > 0;) {
    cur.params.push_back(i);
    cur.bytes += param_tensor_bytes[i];
    const Bytes limit = out.empty() ? first_cap : cap;
    if (cur.bytes >= limit) {
      out.push_back(std::move(cur));
      cur = Bucket{};
    }
  }
  if (!cur.params.empty()) out.push_back(std::move(cur));
  return out;
}

}  // namespace gaccum
