/* SPDX-License-Identifier: MIT */
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/utsname.h>

#include "log.h"
#include "proc-connector.h"

struct ProcConnector {
        struct nl_sock *sk;
        proc_fork_cb cb;
        void *userdata;
        uint64_t events;
};

static int nl_to_errno(int nlerr) {
        switch (-nlerr) {
        case NLE_NOMEM:
                return -ENOMEM;
        case NLE_AGAIN:
                return -EAGAIN;
        case NLE_PERM:
                return -EPERM;
        case NLE_NOACCESS:
                return -EACCES;
        case NLE_PROTO_MISMATCH:
                return -EPROTONOSUPPORT;
        default:
                return -EIO;
        }
}

/* The connector sends its events as NLMSG_DONE messages, which libnl would
 * route to the FINISH callback: take every message as it comes in instead. */
static int on_msg_in(struct nl_msg *msg, void *arg) {
        ProcConnector *pc = arg;
        struct nlmsghdr *nlh = nlmsg_hdr(msg);

        if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(struct cn_msg) + sizeof(struct proc_event)))
                return NL_SKIP;
        struct cn_msg *cn = nlmsg_data(nlh);
        if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
                return NL_SKIP;
        /* The event sits 4-byte aligned after cn_msg; proc_event wants 8:
         * copy it out rather than read it in place. */
        struct proc_event ev;
        memcpy(&ev, cn->data, sizeof(ev));
        if (ev.what == PROC_EVENT_FORK) {
                pc->events++;
                pc->cb(ev.event_data.fork.child_pid, ev.event_data.fork.child_tgid,
                       ev.event_data.fork.parent_tgid, pc->userdata);
        }
        return NL_SKIP;
}

/* Linux 6.6's struct proc_input (absent from older headers): the op and
 * the events wanted, a mask of PROC_EVENT_* (PROC_EVENT_FORK = 1). */
struct proc_input_66 {
        enum proc_cn_mcast_op mcast_op;
        uint32_t event_type;
};

/* Whether the running kernel takes a struct proc_input: one of another
 * size than the op alone is ignored by older ones, which would then send
 * nothing at all. */
static bool kernel_filters_events(void) {
        struct utsname u;
        unsigned major = 0, minor = 0;

        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return false;
        return major > 6 || (major == 6 && minor >= 6);
}

static int send_op(ProcConnector *pc, enum proc_cn_mcast_op op) {
        struct {
                struct cn_msg cn;
                struct proc_input_66 in;
        } __attribute__((packed)) payload = {
                .cn = {.id = {.idx = CN_IDX_PROC, .val = CN_VAL_PROC}},
                .in = {.mcast_op = op, .event_type = PROC_EVENT_FORK},
        };
        size_t len = kernel_filters_events() ? sizeof(struct proc_input_66) : sizeof(enum proc_cn_mcast_op);
        payload.cn.len = (uint16_t) len;
        struct nl_msg *msg = nlmsg_alloc_simple(NLMSG_DONE, 0);
        int r;

        if (!msg)
                return -ENOMEM;
        r = nlmsg_append(msg, &payload, sizeof(struct cn_msg) + len, NLMSG_ALIGNTO);
        if (r >= 0)
                r = nl_send_auto(pc->sk, msg);
        nlmsg_free(msg);
        return r < 0 ? nl_to_errno(r) : 0;
}

int proc_connector_new(proc_fork_cb cb, void *userdata, ProcConnector **ret) {
        _cleanup_(proc_connector_freep) ProcConnector *pc = NULL;
        int r;

        pc = calloc(1, sizeof(*pc));
        if (!pc)
                return -ENOMEM;
        pc->cb = cb;
        pc->userdata = userdata;
        pc->sk = nl_socket_alloc();
        if (!pc->sk)
                return -ENOMEM;
        nl_socket_disable_seq_check(pc->sk);
        /* An event is 76 bytes: one recvmsg() each, not a peek first. */
        nl_socket_disable_msg_peek(pc->sk);
        nl_socket_disable_auto_ack(pc->sk);
        nl_join_groups(pc->sk, CN_IDX_PROC);
        r = nl_socket_modify_cb(pc->sk, NL_CB_MSG_IN, NL_CB_CUSTOM, on_msg_in, pc);
        if (r < 0)
                return nl_to_errno(r);
        r = nl_connect(pc->sk, NETLINK_CONNECTOR);
        if (r < 0)
                return log_debug("Cannot connect to the proc connector: %s", nl_geterror(r)), nl_to_errno(r);
        /* Thread churn comes in bursts: a big buffer rides them out. */
        (void) nl_socket_set_buffer_size(pc->sk, 4 << 20, 0);
        r = nl_socket_set_nonblocking(pc->sk);
        if (r < 0)
                return nl_to_errno(r);
        r = send_op(pc, PROC_CN_MCAST_LISTEN);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(pc);
        return 0;
}

ProcConnector *proc_connector_free(ProcConnector *pc) {
        if (!pc)
                return NULL;
        if (pc->sk) {
                (void) send_op(pc, PROC_CN_MCAST_IGNORE);
                nl_socket_free(pc->sk);
        }
        free(pc);
        return NULL;
}

int proc_connector_fd(const ProcConnector *pc) {
        return nl_socket_get_fd(pc->sk);
}

int proc_connector_process(ProcConnector *pc) {
        for (;;) {
                /* Most ticks find nothing: a peek says so without the 16 KB
                 * buffer libnl allocates for every receive, whose malloc
                 * was 8% of a tick on the simulated host (it sorted all
                 * that the last tick had freed). */
                char c;
                if (recv(nl_socket_get_fd(pc->sk), &c, sizeof(c), MSG_PEEK | MSG_DONTWAIT) < 0) {
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return 0;
                        if (errno == ENOBUFS)
                                return -ENOBUFS;
                }
                int r = nl_recvmsgs_default(pc->sk);
                if (r >= 0)
                        continue;
                if (r == -NLE_AGAIN)
                        return 0;
                if (r == -NLE_NOMEM || r == -NLE_MSG_OVERFLOW)
                        return -ENOBUFS;
                return nl_to_errno(r);
        }
}
