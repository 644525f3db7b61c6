# Tests of the examples on the CUDA test driver.
set(VS_EX_ENV "LD_LIBRARY_PATH=${PROJECT_BINARY_DIR}/lib/testdriver")

foreach(ex ${VS_EXAMPLES})
  add_test(NAME examples.${ex}.help COMMAND ${ex} --help)
  string(REPLACE "-ptds" "" usage_name ${ex})
  set_tests_properties(examples.${ex}.help PROPERTIES
    ENVIRONMENT "${VS_EX_ENV}" PASS_REGULAR_EXPRESSION "usage: ${usage_name}")
endforeach()

add_test(NAME examples.vecadd COMMAND vs-vecadd --size 100000 --iters 2)
set_tests_properties(examples.vecadd PROPERTIES ENVIRONMENT "${VS_EX_ENV}"
  PASS_REGULAR_EXPRESSION "managed: no \\(0/3 buffers\\).*vs-vecadd: PASS")

add_test(NAME examples.vecadd.managed COMMAND vs-vecadd --size 1000 --managed)
set_tests_properties(examples.vecadd.managed PROPERTIES ENVIRONMENT "${VS_EX_ENV}"
  PASS_REGULAR_EXPRESSION "managed: yes \\(3/3 buffers\\).*vs-vecadd: PASS")

# The per-thread build calls the _ptsz/_ptds entry points: check that it
# really does, then that it works.
add_test(NAME examples.vecadd.ptds
  COMMAND sh -c "nm -D \"$0\" | grep -q ' U cuLaunchKernel_ptsz$' && nm -D \"$0\" | grep -q ' U cuMemcpyHtoD_v2_ptds$' && exec \"$0\" --size 5000 --iters 3 --sleep-us 100"
          $<TARGET_FILE:vs-vecadd-ptds>)
set_tests_properties(examples.vecadd.ptds PROPERTIES ENVIRONMENT "${VS_EX_ENV}"
  PASS_REGULAR_EXPRESSION "vs-vecadd: PASS")

add_test(NAME examples.scenarios
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test-examples.sh
          $<TARGET_FILE_DIR:vs-vecadd> ${PROJECT_SOURCE_DIR}/tests/driver/execlog.py)
set_tests_properties(examples.scenarios PROPERTIES ENVIRONMENT "${VS_EX_ENV}")
