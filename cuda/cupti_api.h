#pragma once
// libcupti loaded at run time (dlopen), so tandem neither links it nor needs
// it installed: the profiler records GPU activity where it is found and says
// why not elsewhere. Types and enums come from the toolkit's cupti.h; the
// functions are looked up by name with the signatures that header declares.
#include <cupti.h>

#include <string>

namespace tandem::cuda {

struct CuptiApi {
  decltype(&cuptiGetResultString) get_result_string = nullptr;
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityDisable) activity_disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&cuptiActivityGetNextRecord) activity_get_next_record = nullptr;
  decltype(&cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) activity_get_num_dropped_records = nullptr;
  decltype(&cuptiGetTimestamp) get_timestamp = nullptr;
  decltype(&cuptiSetThreadIdType) set_thread_id_type = nullptr;
  decltype(&cuptiGetCallbackName) get_callback_name = nullptr;
  std::string path;  // the library that was loaded

  // "" on success, else "<call>: <CUPTI's message> (<code>)".
  std::string error(CUptiResult r, const char* call) const;
};

// The process's CUPTI, loaded on first call from, in order: $TANDEM_CUPTI_LIB,
// libcupti.so.13, libcupti.so, and the folder libcudart was loaded from.
// nullptr when none loads or a function is missing; *why then says why.
const CuptiApi* load_cupti(std::string* why);

}  // namespace tandem::cuda
