# Project-wide target helpers: warnings as errors for our code, sanitizers, precompiled
# LibTorch headers. Every library and executable of ours calls gaccum_target_defaults().

set(GACCUM_WARNINGS -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor -Wcast-align
    -Woverloaded-virtual -Wimplicit-fallthrough)
if(GACCUM_WERROR)
  list(APPEND GACCUM_WARNINGS -Werror)
endif()

if(GACCUM_SANITIZE)
  set(GACCUM_SANITIZE_FLAGS -fsanitize=${GACCUM_SANITIZE} -fno-omit-frame-pointer
      -fno-sanitize-recover=undefined)
endif()

function(gaccum_target_defaults target)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    return()
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${GACCUM_WARNINGS}>)
  if(GACCUM_SANITIZE_FLAGS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${GACCUM_SANITIZE_FLAGS}>)
    target_link_options(${target} PRIVATE ${GACCUM_SANITIZE_FLAGS})
  endif()
endfunction()

# Targets that include LibTorch share one precompiled header (torch/torch.h costs ~20 s a TU).
function(gaccum_torch_pch target)
  if(NOT GACCUM_PCH)
    return()
  endif()
  if(NOT TARGET gaccum_torch_pch)
    add_library(gaccum_torch_pch STATIC "${PROJECT_SOURCE_DIR}/cmake/torch_pch.cpp")
    target_link_libraries(gaccum_torch_pch PUBLIC gaccum::torch)
    target_precompile_headers(gaccum_torch_pch PRIVATE <torch/torch.h>)
    gaccum_target_defaults(gaccum_torch_pch)
  endif()
  target_precompile_headers(${target} REUSE_FROM gaccum_torch_pch)
endfunction()
