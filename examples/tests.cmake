# Tests of the examples on the CUDA test driver.
set(VS_EX_ENV "LD_LIBRARY_PATH=${PROJECT_BINARY_DIR}/lib/testdriver")

foreach(ex ${VS_EXAMPLES})
  add_test(NAME examples.${ex}.help COMMAND ${ex} --help)
  set_tests_properties(examples.${ex}.help PROPERTIES
    ENVIRONMENT "${VS_EX_ENV}" PASS_REGULAR_EXPRESSION "usage: ${ex}")
endforeach()

add_test(NAME examples.vecadd COMMAND vs-vecadd --size 100000 --iters 2)
set_tests_properties(examples.vecadd PROPERTIES ENVIRONMENT "${VS_EX_ENV}"
  PASS_REGULAR_EXPRESSION "managed: no \\(0/3 buffers\\).*vs-vecadd: PASS")

add_test(NAME examples.vecadd.managed COMMAND vs-vecadd --size 1000 --managed)
set_tests_properties(examples.vecadd.managed PROPERTIES ENVIRONMENT "${VS_EX_ENV}"
  PASS_REGULAR_EXPRESSION "managed: yes \\(3/3 buffers\\).*vs-vecadd: PASS")

add_test(NAME examples.scenarios
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test-examples.sh
          $<TARGET_FILE_DIR:vs-vecadd> ${PROJECT_SOURCE_DIR}/tests/driver/execlog.py)
set_tests_properties(examples.scenarios PROPERTIES ENVIRONMENT "${VS_EX_ENV}")
