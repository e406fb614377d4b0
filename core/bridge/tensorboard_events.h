#pragma once
// Reading the scalars of a Megatron-Bridge run from the TensorBoard event files it writes under
// `logger.tensorboard_dir` (events.out.tfevents.<time>.<host>...; several after restarts). Pure
// C++: the protobuf decoding lives in the .cpp, so this header pulls in no protobuf. Any thread;
// the functions keep no state.
#include "core/result.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core::bridge {

struct ScalarPoint {
    std::int64_t step = 0;
    double wallTime = 0;  ///< unix seconds, as the writer stamped the event
    double value = 0;
};

struct TensorBoardScalars {
    /// Tag ("lm loss", "throughput/tflops/device", ...) → its points, sorted by step, one per step.
    std::map<std::string, std::vector<ScalarPoint>> byTag;
    int files = 0;                     ///< event files read
    std::int64_t records = 0;          ///< whole records read, the file_version record included
    std::int64_t repeatedPoints = 0;   ///< a tag's step seen again (a restart replayed it): the later one kept
    std::int64_t nonScalarValues = 0;  ///< histograms, images, text, non-scalar tensors: skipped
    /// Not errors: a file that ends inside a record (the writer may still be writing it, or stopped
    /// mid-record); everything before that record is kept. One line each, naming the file.
    std::vector<std::string> warnings;
};

/// Every events.out.tfevents.* file under `fileOrDir` (recursively; ordered by file name, which
/// carries the writer's start time, then by path), or the one file named. A tag's step seen in two places keeps
/// the later one (a later file, or later in the same file). Errors: NotFound (no such path, or no
/// events.out.tfevents.* under the directory), IoError (a file cannot be read), Corrupt (a CRC
/// mismatch, a record that is not an Event, a record cut short before another one starts); the
/// message names the file, the record (1-based) and its byte offset. Reads one file at a time,
/// whole, into memory.
Result<TensorBoardScalars> readTensorBoardEvents(const std::string& fileOrDir);

/// The contents of one event file. `nameForErrors` is the file name used in errors and warnings.
Result<TensorBoardScalars> readTensorBoardEventBytes(std::string_view bytes, const std::string& nameForErrors);

/// CRC-32C (Castagnoli), the checksum of TFRecord framing; crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(std::string_view bytes);

/// TFRecord's masked form of a CRC, stored after the length and after the data.
std::uint32_t maskedCrc32c(std::string_view bytes);

}  // namespace wb::core::bridge
