#include "common/task.h"

namespace strata {

std::string_view task_end_name(TaskEnd e) {
  switch (e) {
    case TaskEnd::completed:
      return "completed";
    case TaskEnd::threw:
      return "threw";
    case TaskEnd::deadline:
      return "deadline";
    case TaskEnd::cancelled:
      return "cancelled";
  }
  return "unknown";
}

}  // namespace strata
