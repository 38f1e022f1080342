/* SPDX-License-Identifier: MIT */
#pragma once

/* Where a trial's metric is read from (the SOURCE of --metric, exposition.h):
 * a file (node_exporter's textfile collector directory, say) or an http://
 * endpoint on the loopback address. This is the I/O half of the appmetric
 * stage; the text goes to exposition_read().
 *
 * http:// is fetched with libcurl, locked down so that a SPEC cannot make
 * steerd (root) a client of anything but a local endpoint: the host must be
 * a loopback literal (127.0.0.0/8, [::1]) or localhost, which is pinned to
 * 127.0.0.1 (CURLOPT_RESOLVE: no DNS lookup, so no resolver can point it
 * elsewhere); the protocol is http only, redirects are not followed, no
 * proxy is used (whatever http_proxy says), the whole transfer has 2 s and
 * max_bytes.
 *
 * libcurl's global state: curl_easy_init() runs curl_global_init() itself
 * on its first call, which is not thread-safe; steerd is single-threaded,
 * so no explicit initialisation is done (nor curl_global_cleanup()). */

#include <stddef.h>

#include "steerd-macros.h"

/* The whole transfer of an http:// source, connect included. */
#define METRIC_SOURCE_TIMEOUT_MSEC 2000U

/* Read source into a new NUL-terminated string *ret_text (caller frees):
 *  - an absolute path: a regular file (opened non-blocking, so that a FIFO
 *    cannot hang the daemon; anything else but a regular file is -EINVAL),
 *    at most max_bytes, -EFBIG beyond;
 *  - "http://HOST[:PORT][PATH]": refused as metric_url_parse() refuses
 *    (-EPERM: not the loopback address, userinfo, another scheme; -EINVAL:
 *    malformed); then a GET: -EFBIG beyond max_bytes, -ETIMEDOUT after
 *    METRIC_SOURCE_TIMEOUT_MSEC, -ECONNREFUSED when nothing listens,
 *    -EREMOTEIO for a status other than 2xx (the status is in the message),
 *    -EIO for another transfer error;
 *  - anything else: -EINVAL.
 * Either way text holding a NUL byte is -EBADMSG (the parser would stop
 * there). On failure, unless -ENOMEM, *ret_error (if not NULL) is a message
 * naming the source, "metric source SOURCE: ..." (caller frees); *ret_text
 * is written only on success. */
int metric_source_fetch(const char *source, size_t max_bytes, char **ret_text, char **ret_error);
