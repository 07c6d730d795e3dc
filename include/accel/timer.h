/* Monotonic wall-clock time. */
#ifndef ACCEL_TIMER_H
#define ACCEL_TIMER_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double accel_now(void);

#endif
