// CUPTI activity buffers: copy the fields the converter needs into raw records.
#include "tracer/inject/cupti_hooks.h"
#include "tracer/inject/state.h"

#include <cstdlib>

namespace faultline::inject {
namespace {

using raw::RawType;

constexpr size_t kBufferSize = 16 << 20;

void write_kernel(const CUpti_ActivityKernel10& k) {
  if (state().options.mode == Mode::kProgram) {
    raw::RawKernelShape r{k.start,
                          k.end,
                          k.correlationId,
                          {static_cast<uint32_t>(k.gridX), static_cast<uint32_t>(k.gridY),
                           static_cast<uint32_t>(k.gridZ)},
                          {static_cast<uint32_t>(k.blockX), static_cast<uint32_t>(k.blockY),
                           static_cast<uint32_t>(k.blockZ)},
                          0};
    return state().sink.write(RawType::kKernelShape, r);
  }
  raw::RawKernelAct r{k.start, k.end, k.correlationId, k.streamId, k.deviceId, 0};
  state().sink.write(RawType::kKernelAct, r);
}

// Program mode: the calls the converter places operations and waits with.
void write_api(const CUpti_ActivityAPI& a) {
  const bool runtime = a.kind == CUPTI_ACTIVITY_KIND_RUNTIME;
  const uint32_t what = api_what(runtime, a.cbid);
  if (!what) return;
  raw::RawApiAct r{
      a.start,
      a.end,
      a.correlationId,
      what,
      static_cast<uint32_t>(runtime ? raw::ApiDomain::kRuntime : raw::ApiDomain::kDriver),
      a.threadId};
  state().sink.write(RawType::kApiAct, r);
}

void write_memcpy(const CUpti_ActivityMemcpy6& m) {
  raw::RawCopyAct r{m.start, m.end, m.bytes, m.correlationId, m.streamId, 0, m.copyKind};
  state().sink.write(RawType::kCopyAct, r);
}

void write_memset(const CUpti_ActivityMemset4& m) {
  raw::RawCopyAct r{m.start, m.end, m.bytes, m.correlationId, m.streamId, 1, 0};
  state().sink.write(RawType::kCopyAct, r);
}

void write_um(const CUpti_ActivityUnifiedMemoryCounter3& u) {
  raw::RawUm r{u.start, u.end,   u.address, u.value, static_cast<uint32_t>(u.counterKind),
               u.srcId, u.dstId, u.flags};
  state().sink.write(RawType::kUm, r);
}

void write_sync(const CUpti_ActivitySynchronization2& s) {
  raw::RawSyncAct r{s.start, s.end, static_cast<uint32_t>(s.type), s.correlationId, s.streamId, 0};
  state().sink.write(RawType::kSyncAct, r);
}

void write_memory(const CUpti_ActivityMemory4& m) {
  raw::RawMemoryAct r{m.timestamp,
                      m.address,
                      m.bytes,
                      static_cast<uint32_t>(m.memoryOperationType),
                      static_cast<uint32_t>(m.memoryKind),
                      m.correlationId,
                      0};
  state().sink.write(RawType::kMemoryAct, r);
}

void write_record(const CUpti_Activity* record) {
  switch (record->kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL:
    return write_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
  case CUPTI_ACTIVITY_KIND_MEMCPY:
    return write_memcpy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
  case CUPTI_ACTIVITY_KIND_MEMSET:
    return write_memset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record));
  case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
    return write_um(*reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter3*>(record));
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
    return write_sync(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record));
  case CUPTI_ACTIVITY_KIND_MEMORY2:
    return write_memory(*reinterpret_cast<const CUpti_ActivityMemory4*>(record));
  case CUPTI_ACTIVITY_KIND_RUNTIME:
  case CUPTI_ACTIVITY_KIND_DRIVER:
    return write_api(*reinterpret_cast<const CUpti_ActivityAPI*>(record));
  default:
    return;
  }
}

} // namespace

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferSize));
  *size = *buffer ? kBufferSize : 0;
  *max_records = 0;
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t,
                                  size_t valid_size) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS)
    write_record(record);
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS && dropped) {
    raw::RawDropped r{dropped};
    state().sink.write(RawType::kDropped, r);
    state().sink.add_dropped(dropped);
  }
  std::free(buffer);
}

} // namespace faultline::inject
