/// \file
/// \brief Assertions of exercise tests that print only what the learner needs: the comparison's
/// own message, without GoogleTest's "Value of: … Actual: false Expected: true" around it.
///
/// Header-only, for test code: it needs GoogleTest, which the workbook library does not link.
#pragma once

#include <gtest/gtest.h>

#include "common/workbook/comparison.h"

/// Records a non-fatal failure with \p comparison's failure message unless every case matched.
/// \param comparison a vramlab::workbook::Comparison (evaluated once).
#define VRAMLAB_EXPECT_PASSES(comparison)                                                      \
  do {                                                                                         \
    const ::vramlab::workbook::Comparison& vramlab_comparison_ = (comparison);                 \
    if (!vramlab_comparison_.passed()) ADD_FAILURE() << vramlab_comparison_.failure_message(); \
  } while (false)
