// The reference lesson binary (lesson_runs_mine.h).
#include "common/workbook/lesson_runs_mine.h"

namespace vramlab::workbook {

bool lesson_runs_mine() {
  return false;
}

}  // namespace vramlab::workbook
