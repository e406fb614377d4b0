// One fuzz target body for the layout-file readers (core/planner/layout_file.h): the input is
// read as a file named `path` (its extension picks YAML, dotlist or runtime JSON; a perf launcher
// command is recognised by its text) and predicted the way `lint` and `predict` do, for a fixed
// model, hardware and GPU count when the file does not name them. The catalog is the built-in one.
// Properties: never throws or crashes (sizes of 0 once divided by zero); the prediction either
// succeeds or is an error with a message; the description of a prediction can be written.
#pragma once

#include "core/planner/catalog.h"
#include "core/planner/layout_file.h"
#include "tests/fuzz/fuzz_check.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace wb::fuzz {

inline int predictLayoutText(const uint8_t* data, size_t size, const char* path)
{
    using namespace wb::core::planner;
    static const Catalog catalog = [] {
        auto loaded = loadCatalog(builtinCatalogDir(WB_SOURCE_DIR));
        check(static_cast<bool>(loaded), "cannot load the built-in catalog", loaded ? "" : loaded.error().message);
        return *loaded;
    }();
    LayoutFileRequest request;
    request.path = path;
    request.text.assign(reinterpret_cast<const char*>(data), size);
    if (emptyLayoutFile(request.path, request.text))
        return 0;
    (void)layoutFileKind(request.path, request.text);
    request.model = "qwen3-vl-30b-a3b";
    request.hardware = "h200";
    request.gpus = 8;
    auto predicted = predictLayoutFile(catalog, request);
    if (!predicted) {
        check(!predicted.error().message.empty(), "a refused layout file has no message");
        return 0;
    }
    (void)describeLayoutFilePrediction(*predicted, {});
    return 0;
}

}  // namespace wb::fuzz
