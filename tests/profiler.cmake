# Profiler tests (included from tests/CMakeLists.txt).
gaccum_test(unit_memory LABEL unit TORCH SOURCES unit/test_memory_tracker.cpp LIBS gaccum::profiler)
