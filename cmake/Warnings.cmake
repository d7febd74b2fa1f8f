# trainbench_warnings(<target>): strict warnings for the project's own code.
function(trainbench_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wcast-align -Woverloaded-virtual)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 reports false -Wmaybe-uninitialized inside nlohmann-json and <regex> at -O2
    # (GCC bug 105562 and relatives), and -Wnull-dereference (not enabled) misfires there too;
    # clang-tidy's analyzer still checks both.
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
  if(TRAINBENCH_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
