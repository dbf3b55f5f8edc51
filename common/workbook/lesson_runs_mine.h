/// \file
/// \brief Which of a lesson's two binaries this is: the declaration alone, so that the two
/// one-line libraries defining it (lesson_runs_mine.cpp, lesson_runs_reference.cpp) compile
/// without lesson_binary.h's CLI11 (13 s each under the sanitizers).
#pragma once

namespace vramlab::workbook {

/// \return true in a lesson's `_mine` binary (`vramlab run NN --mine`: every exercise of the lesson
/// is the learner's), false in the reference binary. Defined at link time by
/// vramlab::lesson_runs_mine or vramlab::lesson_runs_reference (vramlab_add_lesson_binary links
/// one), so that a lesson's own sources compile once for both binaries.
bool lesson_runs_mine();

}  // namespace vramlab::workbook
