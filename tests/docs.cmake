# The docs cannot drift from the tool (issue 37; included from tests/CMakeLists.txt):
# tests/docs/run_doc_commands.sh runs every command shown in README.md and docs/*.md with the built
# gaccum-tune (and the ```python blocks with Debian's python3-torch), and checks README.md's size,
# that no link leaves the repository or names a missing file, and that docs/README.md indexes
# every page. Its profiles are cached under the build directory, never in ~/.cache.
add_test(NAME "docs: every command in README and docs runs"
         COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/docs/run_doc_commands.sh" $<TARGET_FILE:gaccum-tune>
                 "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_BINARY_DIR}/docs" "${GACCUM_TORCH_PYTHON}")
set_tests_properties("docs: every command in README and docs runs" PROPERTIES LABELS integration TIMEOUT 1500)
