# Reports tests (included from tests/CMakeLists.txt).
#  - unit_reports: golden CSV/JSON (tests/data/tune-golden.{csv,json}; regenerate after an
#    intended change with `GACCUM_UPDATE_GOLDEN=1 build/tests/unit_reports "golden*"` and review
#    the diff), the row schema, printers, HTML self-containment, output directory rules.
#  - html report in headless Chromium: renders report.html, screenshots it, and fails on a blank
#    page, any network request or a console error (skips with a message when chromium is absent;
#    scripts/install-deps --test installs it).
#  - html report layout at 8 and 64 GPUs: LLaMA-2-7B on one DGX H100 and on 8 nodes, global batch
#    384 (52 of the 64 world sizes do not divide it; every world size's memory curve differs under
#    zero3) and 512 at 64; integration/html_report_layout.py measures every rendered chart's boxes
#    (legend entries apart and off the plot, data inside the plot, reference lines under the data,
#    memory axis around the cap) and the tables' plan columns; also a profile's report (MiB axes,
#    extrapolated points, a global-batch range), as the test above runs it.
gaccum_test(unit_reports LABEL unit SOURCES unit/test_reports.cpp LIBS gaccum::reports)
target_compile_definitions(unit_reports PRIVATE GACCUM_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data"
                                                GACCUM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

# report.html of a real `tune` run, rendered in headless Chromium (exit 77 = skipped).
find_program(GACCUM_PYTHON3 NAMES python3)
if(GACCUM_PYTHON3)
  set(_html_dir "${CMAKE_CURRENT_BINARY_DIR}/tune-out/html")
  add_test(NAME "html: report renders in headless chromium"
           COMMAND sh -c "rm -rf \"$1\" && \"$0\" tune --profile \"$2/small-profile.json\" --memory-cap 15MiB --global-batch-range 256-512 --lr-ref 3e-4@64 --out \"$1\" >/dev/null && \"$3\" \"$4\" \"$1/report.html\" --screenshot \"$1/report.png\""
                   $<TARGET_FILE:gaccum-tune> ${_html_dir} ${CMAKE_CURRENT_SOURCE_DIR}/data ${GACCUM_PYTHON3}
                   ${CMAKE_CURRENT_SOURCE_DIR}/integration/html_report_chromium.py)
  set_tests_properties("html: report renders in headless chromium" PROPERTIES LABELS integration SKIP_RETURN_CODE 77
                       TIMEOUT 300)
  set(_layout_dir "${CMAKE_CURRENT_BINARY_DIR}/tune-out/layout")
  add_test(NAME "html: report layout at 8 and 64 GPUs in headless chromium"
           COMMAND sh -c "tune=$0 out=$1 src=$2 && rm -rf \"$out\" && t() { \"$tune\" tune --spec \"$src/examples/specs/llama2-7b.json\" --cluster \"$src/examples/clusters/$1.json\" --global-batch $2 --out \"$out/$1-$2\" >/dev/null; } && t dgx-h100-1node 384 && t h100-8node-ib400 384 && t h100-8node-ib400 512 && \"$tune\" tune --profile \"$5/small-profile.json\" --memory-cap 15MiB --global-batch-range 256-512 --out \"$out/profile\" >/dev/null && \"$3\" \"$4\" \"$out/dgx-h100-1node-384/report.html\" \"$out/h100-8node-ib400-384/report.html\" \"$out/h100-8node-ib400-512/report.html\" \"$out/profile/report.html\""
                   $<TARGET_FILE:gaccum-tune> ${_layout_dir} ${PROJECT_SOURCE_DIR} ${GACCUM_PYTHON3}
                   ${CMAKE_CURRENT_SOURCE_DIR}/integration/html_report_layout.py ${CMAKE_CURRENT_SOURCE_DIR}/data)
  set_tests_properties("html: report layout at 8 and 64 GPUs in headless chromium" PROPERTIES LABELS integration
                       SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
