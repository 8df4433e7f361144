/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libqosjail: the client side of qosjaild.  Every function returns 0 (or a
 * positive count) on success and a negative errno on failure.  Link with
 * `pkg-config --cflags --libs qosjail`.  See libqosjail(3).
 */
#ifndef QOSJAIL_H
#define QOSJAIL_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * qj_version() - Version of the library.
 *
 * Return: a static string such as "0.1.0".
 */
const char *qj_version(void);

#ifdef __cplusplus
}
#endif

#endif
