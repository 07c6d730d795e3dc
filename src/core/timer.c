/* Monotonic clock. */
#include "build_config.h"

#include <time.h>

#include "accel/timer.h"

double accel_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
