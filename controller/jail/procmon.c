// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Proc connector via libnl, following the measured recipe (docs/platform.md):
 * sequence checks off, CN_IDX_PROC joined before connect, an 8 MiB receive
 * buffer (32 KiB loses most of a burst of 1000 forks), and the NL_CB_MSG_IN
 * callback because connector messages are typed NLMSG_DONE.  A socket filter
 * drops every event but exec, and exits of the few processes the engine follows
 * after acting on them, in the kernel: 6.1 cannot filter by itself, and without
 * it every fork and exit on the machine would wake the daemon.
 */
#include <arpa/inet.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <stddef.h>
#include <sys/socket.h>

#include "log.h"
#include "procmon.h"
#include "util.h"

struct qj_procmon {
	struct nl_sock *sk;
	int (*cb)(const struct qj_proc_event *ev, void *ud);
	void *ud;
	int count;
	int cb_error;
};

static int on_msg(struct nl_msg *msg, void *arg)
{
	struct qj_procmon *m = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct cn_msg *cn = nlmsg_data(h);
	struct proc_event evbuf, *ev = &evbuf;
	struct qj_proc_event e = {};
	int r;

	if ((size_t)nlmsg_datalen(h) < sizeof(*cn) + sizeof(*ev) || cn->id.idx != CN_IDX_PROC ||
	    cn->id.val != CN_VAL_PROC)
		return NL_SKIP;
	/* cn->data is only 4-byte aligned in the netlink buffer: copy (UBSan). */
	memcpy(&evbuf, cn->data, sizeof(evbuf));
	if (ev->what == PROC_EVENT_EXEC) {
		e.what = QJ_PROC_EXEC;
		e.pid = ev->event_data.exec.process_pid;
		e.tgid = ev->event_data.exec.process_tgid;
	} else if (ev->what == PROC_EVENT_EXIT) {
		e.what = QJ_PROC_EXIT;
		e.pid = ev->event_data.exit.process_pid;
		e.tgid = ev->event_data.exit.process_tgid;
		e.exit_code = (int)ev->event_data.exit.exit_code;
	} else {
		return NL_SKIP;
	}
	m->count++;
	if (m->cb) {
		r = m->cb(&e, m->ud);
		if (r < 0 && m->cb_error == 0)
			m->cb_error = r;
	}
	return NL_OK;
}

/*
 * Classic BPF: accept exec events (and the listen acknowledgement), exits of
 * the watched processes (every exit when @n is too many to name), drop the
 * rest.
 */
static int attach_filter(int fd, const pid_t *tgids, size_t n)
{
	const uint32_t data = NLMSG_LENGTH(0) + offsetof(struct cn_msg, data);
	const uint32_t what_off = data + offsetof(struct proc_event, what);
	const uint32_t tgid_off = data + offsetof(struct proc_event, event_data.exit.process_tgid);
	struct sock_filter code[6 + QJ_PROCMON_MAX_WATCH];
	bool all = n > QJ_PROCMON_MAX_WATCH;
	size_t k = 0, accept, drop;
	struct sock_fprog prog;

	if (all)
		n = 0;
	/* Layout: what; exec?; none?; exit?; tgid; n compares; drop; accept. */
	drop = 5 + n;
	accept = drop + 1;
	/* BPF_ABS loads are big-endian: compare against htonl() of the host value. */
	code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, what_off);
	code[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_EXEC),
					       (uint8_t)(accept - k - 1), 0);
	k++;
	code[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(PROC_EVENT_NONE),
					       (uint8_t)(accept - k - 1), 0);
	k++;
	if (all) {
		code[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						       htonl(PROC_EVENT_EXIT),
						       (uint8_t)(accept - k - 1), 0);
	} else {
		code[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						       htonl(PROC_EVENT_EXIT), 0,
						       (uint8_t)(drop - k - 1));
	}
	k++;
	code[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, tgid_off);
	for (size_t i = 0; i < n; i++, k++)
		code[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						       htonl((uint32_t)tgids[i]),
						       (uint8_t)(accept - k - 1), 0);
	code[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	code[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffffffff);
	prog = (struct sock_fprog){ .len = (unsigned short)k, .filter = code };
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		return negative_errno();
	return 0;
}

static int listen_op(struct qj_procmon *m, enum proc_cn_mcast_op op)
{
	struct {
		struct cn_msg cn;
		enum proc_cn_mcast_op op;
	} __attribute__((packed)) req = {};
	struct nl_msg *msg;
	int r;

	req.cn.id.idx = CN_IDX_PROC;
	req.cn.id.val = CN_VAL_PROC;
	req.cn.len = sizeof(req.op);
	req.op = op;
	msg = nlmsg_alloc_simple(NLMSG_DONE, 0);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &req, sizeof(req), 0) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = nl_send_auto(m->sk, msg);
	nlmsg_free(msg);
	return r < 0 ? -EIO : 0;
}

int qj_procmon_new(struct qj_procmon **ret)
{
	struct qj_procmon *m;
	int fd, size = 8 * 1024 * 1024;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->sk = nl_socket_alloc();
	if (!m->sk) {
		free(m);
		return -ENOMEM;
	}
	nl_socket_disable_seq_check(m->sk);
	nl_join_groups(m->sk, CN_IDX_PROC);
	r = nl_connect(m->sk, NETLINK_CONNECTOR);
	if (r < 0) {
		r = -EPERM;
		goto fail;
	}
	fd = nl_socket_get_fd(m->sk);
	/* nl_connect() set 32 KiB; bursts of forks need far more. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		log_debug_errno(errno, "SO_RCVBUFFORCE failed, ignoring: %m");
	r = attach_filter(fd, NULL, 0);
	if (r < 0)
		log_debug_errno(r,
				"Exec-only socket filter failed, every process event wakes us: %m");
	nl_socket_modify_cb(m->sk, NL_CB_MSG_IN, NL_CB_CUSTOM, on_msg, m);
	r = listen_op(m, PROC_CN_MCAST_LISTEN);
	if (r < 0)
		goto fail;
	nl_socket_set_nonblocking(m->sk);
	*ret = m;
	return 0;
fail:
	qj_procmon_free(m);
	return r;
}

struct qj_procmon *qj_procmon_free(struct qj_procmon *m)
{
	if (!m)
		return NULL;
	if (m->sk) {
		(void)listen_op(m, PROC_CN_MCAST_IGNORE);
		nl_socket_free(m->sk);
	}
	free(m);
	return NULL;
}

int qj_procmon_fd(const struct qj_procmon *m)
{
	return m ? nl_socket_get_fd(m->sk) : -EBADF;
}

int qj_procmon_watch_exits(struct qj_procmon *m, const pid_t *tgids, size_t n)
{
	return attach_filter(nl_socket_get_fd(m->sk), tgids, n);
}

int qj_procmon_dispatch(struct qj_procmon *m, int (*cb)(const struct qj_proc_event *ev, void *ud),
			void *ud, bool *ret_more)
{
	bool more = true;
	int r;

	m->cb = cb;
	m->ud = ud;
	m->count = 0;
	m->cb_error = 0;
	for (unsigned n = 0; n < QJ_PROCMON_BUDGET; n++) {
		errno = 0;
		r = nl_recvmsgs_default(m->sk);
		if (r == -NLE_AGAIN) {
			more = false;
			break;
		}
		if (r == -NLE_NOMEM && errno == ENOBUFS)
			return -ENOBUFS; /* overrun: events were dropped */
		if (r < 0)
			return -EIO;
		if (m->cb_error == -ENOMEM)
			return -ENOMEM;
	}
	if (ret_more)
		*ret_more = more;
	return m->count;
}
