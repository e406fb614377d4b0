# The schema half of core/ that moe-train compiles itself (it never links wb_core: no spdlog, no
# SQLite): run configs, metrics records, model FLOPs and their small helpers. The one list of
# them, for runtime/CMakeLists.txt (the wb_core_schema library), remote/CMakeLists.txt (installed
# with the runtime sources) and remote/runtime_bundle.cpp (sent to nodes with the runtime), which
# reads the core/*.cpp lines of this file. Paths relative to the repository root.
set(WB_CORE_SCHEMA_SOURCES
  core/result.cpp
  core/text_file.cpp
  core/run_config.cpp
  core/run_config_validate.cpp
  core/metrics_schema.cpp
  core/model_flops.cpp
)
