/* Monotonic wall-clock time, and the backoff of every wait loop. */
#ifndef ACCEL_TIMER_H
#define ACCEL_TIMER_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double accel_now(void);

/* One poll of a wait loop: spin briefly (collectives usually finish fast), then yield the core,
 * then sleep 50 us, so ranks oversubscribed on a few cores do not steal time from those still
 * computing. spins counts the polls so far. */
void accel_wait_backoff(long spins);

#endif
