// The reference lesson binary (lesson_binary.h, lesson_runs_mine()).
#include "common/workbook/lesson_binary.h"

namespace vramlab::workbook {

bool lesson_runs_mine() {
  return false;
}

}  // namespace vramlab::workbook
