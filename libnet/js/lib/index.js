'use strict'
// A drop-in for lib-net's JavaScript API (@shardeum-foundation/lib-net
// 1.6.1, @shardus/net 1.4.x) over courier's native core, plus the raw lane.
// What differs from lib-net 1.6.1, on purpose:
//  - a one-way send (timeout 0) arms no timer: the core answers every send
//    (within its dial and write timeouts), so nothing is left pending;
//  - multiSendWithHeader(..., awaitProcessing = false) resolves once the
//    message is queued (lib-net's promise never settles);
//  - stopListening exists (lib-net's native core has none: it throws);
//  - tellRaw, multiTellRaw, askRaw, listenRaw and allowRaw carry Buffers
//    without JSON or base64 (header version 2), to peers known to take it.
const path = require('path')
const { randomUUID } = require('crypto')
const { NewAugData, validateSnOpts } = require('./types')

const corePath = path.join(__dirname, '..', 'shardus-net.node')

function loadCore() {
  try {
    return require(corePath)
  } catch (err) {
    throw new Error(
      `lib-net (courier): the native core ${corePath} did not load: ${err.message}. ` +
        'It is built when the package installs, with Go and gcc (see README.md); run `npm rebuild` in this package after installing them.'
    )
  }
}

const net = loadCore()

const logFlags = { net_verbose: false, net_stats: false, net_rust: false }
const noop = () => {}
const DEFAULT_ADDRESS = '0.0.0.0'
const RETAIN_TIMED_OUT_MS = 60 * 1000
const TIMED_OUT_MAX = 10000
const RAW_VERSION = 2

const getSenderAddress = (rawTx) => net.getSenderAddress(rawTx.startsWith('0x') ? rawTx.slice(2) : rawTx)

const asError = (e) => (e instanceof Error ? e : new Error(String(e)))

const Sn = (opts) => {
  validateSnOpts(opts)
  const PORT = opts.port
  const ADDRESS = opts.address || DEFAULT_ADDRESS
  const sender = opts.senderOpts || {}
  const payload = opts.payloadOpts || {}
  const raw = opts.rawOpts || {}
  const HEADER_OPTS = opts.headerOpts || { sendHeaderVersion: 0 }
  const _net = net.Sn(
    PORT,
    ADDRESS,
    !!sender.useLruCache,
    sender.lruSize || 1028,
    opts.crypto.hashKey,
    opts.crypto.signingSecretKeyHex,
    payload.payloadSizeLimitInBytes || 2 * 1024 * 1024,
    payload.headerSizeLimitInBytes || 2 * 1024,
    {
      rawAll: !!raw.all,
      dedup: !!raw.dedup,
      dedupSize: raw.dedupSize,
      senderId: raw.senderId,
      queueLength: raw.queueLength,
      receiveQueue: raw.receiveQueue,
      rawPeers: (raw.peers || []).join(','),
    }
  )
  net.setLoggingEnabled(false)

  const stringify = (v) => (opts.customStringifier ? opts.customStringifier(v) : JSON.stringify(v))
  const parse = (s) => (opts.customJsonParser ? opts.customJsonParser(s) : JSON.parse(s))

  // Asks waiting for their 'resp': UUID -> { callback, timer, timestamp }.
  const pending = new Map()
  // Asks that timed out, kept a minute for the log of a late reply (lib-net
  // keeps a timer per entry; here they are pruned as new ones come).
  const timedOut = new Map()

  const noteTimedOut = (UUID, createdAt) => {
    const now = Date.now()
    for (const [k, v] of timedOut) {
      if (timedOut.size < TIMED_OUT_MAX && now - v.timedOutAt < RETAIN_TIMED_OUT_MS) break
      timedOut.delete(k)
    }
    timedOut.set(UUID, { timedOutAt: now, requestCreatedAt: createdAt })
  }

  const armAsk = (aug, timeout, onResponse, onTimeout) => {
    const timestamp = Date.now()
    const timer = setTimeout(() => {
      pending.delete(aug.UUID)
      noteTimedOut(aug.UUID, timestamp)
      if (logFlags.net_verbose) console.log(`_sendAug: request id ${aug.UUID}: timed out after ${Date.now() - timestamp}ms`)
      onTimeout()
    }, timeout)
    pending.set(aug.UUID, { timer, timestamp, callback: onResponse })
  }

  const failure = (aug, err) => {
    const msg = `_wrappedSendAug: request id ${aug.UUID}: failed with error ${err}`
    if (logFlags.net_verbose) console.error(msg)
    return new Error(msg)
  }

  // sendAug sends augData; the promise settles when the native core has
  // written it (or failed), never on a timer.
  const sendAug = (port, address, aug, timeout, onResponse, onTimeout, header, awaitProcessing = true) =>
    new Promise((resolve, reject) => {
      const data = stringify(aug)
      const hdr = header ? stringify(header.headerData) : null
      let settled = false
      const done = (err) => {
        if (settled) {
          if (err && logFlags.net_verbose) console.error(failure(aug, err).message)
          return
        }
        settled = true
        if (err) reject(failure(aug, err))
        else resolve()
      }
      if (timeout !== 0) armAsk(aug, timeout, onResponse, onTimeout)
      try {
        if (header) {
          if (Array.isArray(port) && Array.isArray(address)) {
            _net.multi_send_with_header(port, address, header.version, hdr, data, done, awaitProcessing)
            if (!awaitProcessing) done()
          } else {
            _net.send_with_header(port, address, header.version, hdr, data, done)
          }
        } else {
          _net.send(port, address, data, done)
        }
      } catch (err) {
        const p = pending.get(aug.UUID)
        if (p) {
          clearTimeout(p.timer)
          pending.delete(aug.UUID)
        }
        settled = true
        reject(err)
      }
    })

  const dirOf = (onResponse) => (onResponse === noop ? 'tell' : 'ask')

  const combined = (UUID, header) => ({
    uuid: UUID,
    sender_id: header.sender_id,
    tracker_id: header.tracker_id,
    verification_data: header.verification_data,
    compression: header.compression,
  })

  const send = async (port, address, data, timeout = 0, onResponse = noop, onTimeout = noop) => {
    const UUID = randomUUID()
    const aug = NewAugData(data, UUID, PORT, ADDRESS, timeout, dirOf(onResponse))
    return sendAug(port, address, aug, timeout, onResponse, onTimeout)
  }

  const sendWithHeader = async (port, address, data, header, timeout = 0, onResponse = noop, onTimeout = noop) => {
    const UUID = randomUUID()
    const aug = NewAugData(data, UUID, PORT, ADDRESS, timeout, dirOf(onResponse))
    return sendAug(port, address, aug, timeout, onResponse, onTimeout, {
      version: HEADER_OPTS.sendHeaderVersion,
      headerData: combined(UUID, header),
    })
  }

  const multiSendWithHeader = async (ports, addresses, data, header, timeout = 0, onResponse = noop, onTimeout = noop, awaitProcessing = true) => {
    const UUID = randomUUID()
    const aug = NewAugData(data, UUID, PORT, ADDRESS, timeout, dirOf(onResponse))
    return sendAug(
      ports,
      addresses,
      aug,
      timeout,
      onResponse,
      onTimeout,
      { version: HEADER_OPTS.sendHeaderVersion, headerData: combined(UUID, header) },
      awaitProcessing
    )
  }

  const listen = async (handleData) => {
    const onMessage = (augStr, remote, header, sign) => {
      const aug = parse(augStr)
      const { PORT: replyPort, UUID, data } = aug
      const receivedTime = Date.now()
      const respond = (replyData, replyHeader) => {
        const replyTime = Date.now()
        if (replyTime > aug.sendTime + aug.timeout) {
          if (logFlags.net_verbose) console.log(`listen: request id ${UUID}: reply after the asker's timeout; not sent`)
          return
        }
        const sendData = {
          data: replyData,
          UUID,
          PORT: replyPort,
          ADDRESS: undefined,
          sendTime: aug.sendTime,
          receivedTime,
          replyTime,
          replyReceivedTime: 0,
          msgDir: 'resp',
        }
        const headerData = replyHeader ? combined(UUID, replyHeader) : { uuid: UUID }
        return sendAug(replyPort, remote.address, sendData, 0, noop, noop, {
          version: HEADER_OPTS.sendHeaderVersion,
          headerData,
        }).catch(console.error)
      }
      const waiting = pending.get(UUID)
      if (waiting) {
        clearTimeout(waiting.timer)
        pending.delete(UUID)
        return waiting.callback(data, header, sign)
      }
      if (timedOut.delete(UUID) && logFlags.net_verbose) console.log(`listen: request id ${UUID}: reply after its timeout`)
      return handleData(data, remote, respond, header, sign)
    }
    _net.listen((data, remoteIp, remotePort, headerVersion, headerData, signData) => {
      try {
        const remote = { address: remoteIp, port: remotePort }
        if (headerVersion && headerData && signData) {
          onMessage(data, remote, JSON.parse(headerData), JSON.parse(signData))
          return
        }
        onMessage(data, remote)
      } catch (e) {
        console.error("Error in shardus-net's listen callback:", e)
      }
    })
  }

  const stopListening = () => _net.stopListening()
  const evictSocket = (port, address) => _net.evict_socket(port, address)
  const updateHeaderOpts = (o) => {
    HEADER_OPTS.sendHeaderVersion = o.sendHeaderVersion
  }
  const stats = () => _net.stats()

  const setLogFlags = (flags) => {
    if (flags == null) return
    for (const [key, value] of Object.entries(flags)) logFlags[key] = value
    logFlags.net_stats ??= false
    logFlags.net_verbose ??= false
    logFlags.net_rust ??= false
    net.setLoggingEnabled(!!logFlags.net_rust)
  }

  // ---- the raw lane ----

  // Header strings per route and codec, built once each: no JSON per message.
  const headers = new Map()
  const rawHeader = (o) => {
    const route = (o && o.route) || ''
    const compression = (o && o.compression) || 'None'
    const key = compression + '\0' + route
    let h = headers.get(key)
    if (h === undefined) {
      if (headers.size > 1024) headers.clear()
      h = JSON.stringify({ route, compression })
      headers.set(key, h)
    }
    return h
  }

  // tellRaw sends payload (a Buffer or Uint8Array, read in place: do not
  // change it until the promise settles) as a raw-lane tell.
  const tellRaw = (port, address, payload, o) =>
    new Promise((resolve, reject) => {
      _net.send_with_header_raw(port, address, RAW_VERSION, rawHeader(o), payload, (err) => (err ? reject(new Error(err)) : resolve()))
    })

  // multiTellRaw frames payload once for every peer; it resolves with one
  // entry per peer: null, or the Error of that peer.
  const multiTellRaw = (ports, addresses, payload, o) =>
    new Promise((resolve) => {
      _net.multi_send_with_header_raw(ports, addresses, RAW_VERSION, rawHeader(o), payload, (results) =>
        resolve(results.map((e) => (e === null ? null : new Error(e))))
      )
    })

  // askRaw sends payload as a raw-lane ask; the deadline (o.timeout ms,
  // default 5000) is kept by the core, not by a JavaScript timer.
  const askRaw = (port, address, payload, o) =>
    new Promise((resolve, reject) => {
      const timeout = (o && o.timeout) || 5000
      _net.ask_raw(port, address, rawHeader(o), payload, timeout, (err, reply, senderId, route) => {
        if (err) reject(new Error(err))
        else resolve({ payload: reply, header: { sender_id: senderId, route } })
      })
    })

  const noRespond = () => Promise.reject(new Error('respond: the message is a tell'))

  // listenRaw hands each raw-lane tell or ask to handler(header, payload,
  // respond): payload is a Buffer over the core's memory (no copy into
  // JavaScript); respond(Buffer) answers an ask and returns a promise.
  const listenRaw = (handler) => {
    _net.listen_raw((buf, route, senderId, dir, token, ip, port) => {
      const isAsk = dir === 2
      const header = { route, sender_id: senderId, dir: isAsk ? 'ask' : 'tell', remote: { address: ip, port } }
      const respond = isAsk
        ? (reply) => new Promise((resolve, reject) => _net.respond_raw(token, reply, (err) => (err ? reject(new Error(err)) : resolve())))
        : noRespond
      try {
        handler(header, buf, respond)
      } catch (e) {
        console.error("Error in shardus-net's listenRaw handler:", e)
      }
    })
  }

  // allowRaw marks a peer as taking the raw lane (or not, with on false).
  const allowRaw = (port, address, on = true) => _net.allow_raw(port, address, !!on)

  return {
    send,
    sendWithHeader,
    multiSendWithHeader,
    listen,
    stopListening,
    stats,
    evictSocket,
    updateHeaderOpts,
    setLogFlags,
    tellRaw,
    multiTellRaw,
    askRaw,
    listenRaw,
    allowRaw,
  }
}

// goRuntime([maxProcs[, memoryLimitBytes]]) sets and reports the Go
// runtime's GOMAXPROCS and memory limit in this process.
const goRuntime = (maxProcs = 0, memoryLimit = 0) => net.goRuntime(maxProcs, memoryLimit)

module.exports = { Sn, getSenderAddress, logFlags, goRuntime }
