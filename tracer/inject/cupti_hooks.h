// The CUPTI front-end's entry points (observe, timing and access mode). Kept apart from state.h
// because cupti.h and the Sanitizer API's headers cannot be included together.
#pragma once

#include <cupti.h>
#include <string>
#include <vector>

namespace faultline::inject {

// CUPTI entry points.
void CUPTIAPI on_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data);
void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size,
                                  size_t valid_size);
std::vector<CUpti_CallbackId> driver_callback_ids();
bool is_launch(uint32_t driver_id);          // a kernel launch, in the driver's numbering
bool is_runtime_launch(uint32_t runtime_id); // and in the runtime's
std::vector<CUpti_CallbackId> runtime_callback_ids();
// Program mode: what a runtime or driver call is to the converter (a raw::ApiWhat value), or 0
// for a call it does not need.
uint32_t api_what(bool runtime, uint32_t id);
std::string drain_meta();  // access mode: how often and how long the queue was drained
std::string timing_meta(); // timing mode: what the launches' callbacks cost, prefetches made

} // namespace faultline::inject
