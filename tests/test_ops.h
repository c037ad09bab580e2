/* The ops suite (tests/test_ops*.c): shared declarations. */
#ifndef TEST_OPS_H
#define TEST_OPS_H

#include <check.h>

/* Adds the numeric test cases: every op x every relevant dtype x
 * contiguous / non-contiguous inputs, against f64 references
 * (test_ops_numeric.c). */
void ops_add_numeric_tcases(Suite *suite);

#endif /* TEST_OPS_H */
