/* accel: MPI-native distributed training for HPC clusters. Include this for the whole API. */
#ifndef ACCEL_ACCEL_H
#define ACCEL_ACCEL_H

#include "accel/status.h"
#include "accel/file.h"
#include "accel/log.h"
#include "accel/timer.h"
#include "accel/config.h"
#include "accel/launch.h"
#include "accel/device.h"
#include "accel/runtime.h"
#include "accel/dtype.h"
#include "accel/comm.h"
#include "accel/rng.h"
#include "accel/arena.h"
#include "accel/model.h"
#include "accel/data.h"
#include "accel/memory.h"
#include "accel/dataset.h"
#include "accel/eval.h"
#include "accel/tokenizer.h"
#include "accel/chat.h"
#include "accel/trainer.h"
#include "accel/version.h"
#include "accel/ckpt.h"
#include "accel/safetensors.h"
#include "accel/hf.h"
#include "accel/infer.h"

#endif
