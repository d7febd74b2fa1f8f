# tests/scale/plot_figures.py (the scale figures as SVG) on synthetic figures: well-formed,
# labelled, deterministic. Needs only python3, no control plane.
add_test(NAME scale.plot_figures COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/plot_figures_test.sh)
set_tests_properties(scale.plot_figures PROPERTIES LABELS "scale" TIMEOUT 60)
