/* Private to libaccel: recognising an HDF5 file without opening it through HDF5. */
#ifndef ACCEL_CORE_H5PROBE_H
#define ACCEL_CORE_H5PROBE_H

/* 1 when the file of `size` bytes carries the HDF5 superblock signature (at byte 0 or, after a user
 * block, at 512, 1024, 2048, ...), else 0. Checked by hand rather than with H5Fis_hdf5, which opens
 * the file with the serial driver and takes a file lock (refused on parallel file systems mounted
 * without flock). */
int accel_h5_probe(const char *path, long long size);

#endif
