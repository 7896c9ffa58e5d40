# Installs the build into PREFIX and checks what arrived (see CMakeLists.txt).
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE failed OUTPUT_QUIET)
if(failed)
  message(FATAL_ERROR "cmake --install failed")
endif()
foreach(path bin/gradex share/gradex/scenarios/quickstart.json share/doc/gradex/README.md
        share/doc/gradex/LICENSE share/doc/gradex/architecture.md
        share/doc/gradex/calibration.md share/gradex/calibration/reference_points.json
        share/gradex/plot.py share/gradex/import_nccl_tests.py share/gradex/model_from_torch.py
        share/gradex/models/resnet50.json)
  if(NOT EXISTS "${PREFIX}/${path}")
    message(FATAL_ERROR "not installed: ${path}")
  endif()
endforeach()
execute_process(COMMAND "${PREFIX}/bin/gradex" validate "${PREFIX}/share/gradex/scenarios/quickstart.json"
                RESULT_VARIABLE failed OUTPUT_VARIABLE out)
if(failed OR NOT out MATCHES "valid")
  message(FATAL_ERROR "the installed gradex did not validate its scenario: ${out}")
endif()
file(REMOVE_RECURSE "${PREFIX}")
