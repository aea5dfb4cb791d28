'use strict'
// npm run bench: the raw lane against the legacy lane, as the seed report
// measures them (sender and receiver in separate processes on loopback,
// 64 sends in flight). The legacy lane is lib-net's published wrapper
// @shardus/net 1.4.3 over this package's core, with shardus-core's
// stringifier (a Buffer becomes {"value":base64,"dataType":"bb"}); the raw
// lane is this package's tellRaw and askRaw. Columns, per message:
//   wire B      bytes on the wire of a request (the receiver's count)
//   JS µs       sender JS-thread busy time (performance.eventLoopUtilization)
//   CPU µs      sender process CPU, user + system (process.cpuUsage)
//   timers      Timeout objects still pending after the burst
//   arrayBuf MB, external MB   sender memory after the burst and two GCs,
//               over the level before it (process.memoryUsage)
//   b64/JSON    base64 and JSON passes per message (the stringifier's and
//               parser's, and the core's own counters)
// Flags: --quick (fewer messages), --json (one JSON line per row).
const { fork, execFileSync } = require('child_process')
const fs = require('fs')
const path = require('path')
const { performance } = require('perf_hooks')

if (typeof global.gc !== 'function') {
  const r = require('child_process').spawnSync(process.execPath, ['--expose-gc', __filename, ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(r.status === null ? 1 : r.status)
}

const pkg = path.join(__dirname, '..')
const courier = require(pkg)
const keys = {
  hashKey: '64f152869ca2d473e4ba64ab53f49ccdb2edae22da192c126850970e788af347',
  signingSecretKeyHex:
    'c3774b92cc8850fb4026b073081290b82cab3c0f66cac250b4d710ee9aaf83ed8088b37f6f458104515ae18c2a05bde890199322f62ab5114d20c77bde5e6c9d',
}
const quick = process.argv.includes('--quick')
const asJSON = process.argv.includes('--json')
const INFLIGHT = 64

// wrapper returns lib-net 1.4.3's published wrapper with this package's
// core where it requires it (a symbolic link: one Go runtime per process).
function wrapper() {
  const candidates = [path.join(pkg, 'test', 'node_modules', 'wrapper-1.4.3'), path.join(__dirname, '.deps', 'node_modules', '@shardus', 'net')]
  let dir = candidates.find((d) => fs.existsSync(path.join(d, 'package.json')))
  if (!dir) {
    console.error('bench: installing @shardus/net@1.4.3 (install scripts off) into bench/.deps')
    fs.mkdirSync(path.join(__dirname, '.deps'), { recursive: true })
    execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-save', '--prefix', path.join(__dirname, '.deps'), '@shardus/net@1.4.3'], {
      stdio: 'inherit',
    })
    dir = candidates[1]
  }
  const link = path.join(dir, 'shardus-net.node')
  const core = path.join(pkg, 'shardus-net.node')
  if (!fs.existsSync(link) || fs.realpathSync(link) !== fs.realpathSync(core)) {
    fs.rmSync(link, { force: true })
    fs.symlinkSync(core, link)
  }
  return require(dir)
}

// shardus-core's stringifier and parser for Buffers (lib-types
// safeStringify, typeReviver), counting their passes.
const ops = { json: 0, base64: 0 }
const stringifier = (v) => {
  ops.json++
  return JSON.stringify(v, function (k, val) {
    const orig = this[k]
    if (Buffer.isBuffer(orig)) {
      ops.base64++
      return { value: orig.toString('base64'), dataType: 'bb' }
    }
    return val
  })
}
const parser = (s) => {
  ops.json++
  return JSON.parse(s, (k, v) => {
    if (v && v.dataType === 'bb' && typeof v.value === 'string') {
      ops.base64++
      return Buffer.from(v.value, 'base64')
    }
    return v
  })
}

async function burst(n, fn) {
  let started = 0
  const worker = async () => {
    while (started < n) {
      started++
      await fn()
    }
  }
  await Promise.all(Array.from({ length: INFLIGHT }, worker))
}

const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length

function memory() {
  global.gc()
  global.gc()
  const m = process.memoryUsage()
  return { arrayBuffers: m.arrayBuffers, external: m.external }
}

async function main() {
  const legacyNet = wrapper()
  const recvPort = 41801 + Math.floor(Math.random() * 500)
  const child = fork(path.join(__dirname, 'recv.js'), [JSON.stringify({ port: recvPort })], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const ask = (msg) =>
    new Promise((resolve) => {
      child.once('message', resolve)
      child.send(msg)
    })
  await new Promise((resolve) => child.once('message', resolve)) // ready
  const legacyPort = recvPort + 1
  const rawPort = recvPort + 2
  const legacy = legacyNet.Sn({
    port: legacyPort,
    address: '127.0.0.1',
    crypto: keys,
    headerOpts: { sendHeaderVersion: 1 },
    customStringifier: stringifier,
    customJsonParser: parser,
  })
  await legacy.listen(() => {})
  const raw = courier.Sn({ port: rawPort, address: '127.0.0.1', crypto: keys, rawOpts: { peers: [`127.0.0.1:${recvPort}`], senderId: 'bench' } })
  const header = { sender_id: 'bench', tracker_id: 't' }
  // settle waits until the receiver has read everything sent so far.
  const settle = async () => {
    let last = await ask('stats')
    for (;;) {
      await new Promise((r) => setTimeout(r, 100))
      const now = await ask('stats')
      if (now.received.messages === last.received.messages) return now
      last = now
    }
  }
  const lanes = {
    legacy: {
      tell: (p) => legacy.sendWithHeader(recvPort, '127.0.0.1', { route: 'binary/bench', payload: p }, header),
      ask: (p) =>
        new Promise((resolve, reject) =>
          legacy
            .sendWithHeader(recvPort, '127.0.0.1', { route: 'binary/bench', payload: p }, header, 5000, resolve, () => reject(new Error('ask timed out')))
            .catch(reject)
        ),
      stats: () => legacy.stats(),
    },
    raw: {
      tell: (p) => raw.tellRaw(recvPort, '127.0.0.1', p, { route: 'bench' }),
      ask: (p) => raw.askRaw(recvPort, '127.0.0.1', p, { route: 'bench' }),
      stats: () => raw.stats(),
    },
  }
  const sizes = [
    [1000, quick ? 1000 : 5000],
    [10000, quick ? 500 : 2000],
    [100000, quick ? 100 : 400],
  ]
  const rows = []
  for (const [size, n] of sizes) {
    for (const kind of ['tell', 'ask']) {
      for (const lane of ['legacy', 'raw']) {
        const l = lanes[lane]
        const warm = Buffer.alloc(size, 7)
        await burst(Math.min(200, n), () => l[kind](warm)) // warm-up
        await settle()
        const base = memory()
        // One payload per message, as an application sends: what a lane
        // keeps of them after the burst shows in arrayBuffers.
        let payloads = Array.from({ length: n }, (_, i) => Buffer.alloc(size, i & 0xff))
        let next = 0
        const r0 = await ask('stats')
        const s0 = l.stats()
        const t0 = timeouts()
        const o0 = { ...ops }
        const cpu0 = process.cpuUsage()
        const elu0 = performance.eventLoopUtilization()
        await burst(n, () => l[kind](payloads[next++]))
        const elu = performance.eventLoopUtilization(elu0)
        const cpu = process.cpuUsage(cpu0)
        const pending = timeouts() - t0
        payloads = null
        const r1 = await settle()
        const after = memory()
        const s1 = l.stats()
        const coreOps = s1.base64_ops - s0.base64_ops + (s1.json_ops - s0.json_ops)
        const row = {
          payload: size,
          kind,
          lane: lane === 'legacy' ? 'legacy (wrapper 1.4.3)' : 'raw',
          n,
          wireBytes: Math.round((r1.received.bytes - r0.received.bytes) / (r1.received.messages - r0.received.messages)),
          jsUs: (elu.active * 1000) / n,
          cpuUs: (cpu.user + cpu.system) / n,
          timers: pending,
          arrayBuffersMB: Math.max(0, after.arrayBuffers - base.arrayBuffers) / 1e6,
          externalMB: Math.max(0, after.external - base.external) / 1e6,
          opsPerMsg: (ops.json - o0.json + ops.base64 - o0.base64 + coreOps) / n,
        }
        rows.push(row)
        if (asJSON) console.log(JSON.stringify(row))
        else console.error(`bench: ${size} B ${kind} ${lane}: done`)
      }
    }
  }
  child.send('quit')
  if (!asJSON) print(rows)
  process.exit(checkTargets(rows) ? 0 : 1)
}

function print(rows) {
  const f = (v, d = 0) => v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d })
  console.log('| payload | kind | lane | wire B/msg | sender JS µs/msg | sender CPU µs/msg | pending timers after | arrayBuffers MB after GC | external MB after GC | base64+JSON ops/msg |')
  console.log('|---|---|---|---|---|---|---|---|---|---|')
  for (const r of rows) {
    console.log(
      `| ${f(r.payload / 1000)} kB | ${r.kind} | ${r.lane} | ${f(r.wireBytes)} | ${f(r.jsUs, 1)} | ${f(r.cpuUs, 1)} | ${f(r.timers)} | ${f(r.arrayBuffersMB, 1)} | ${f(r.externalMB, 1)} | ${f(r.opsPerMsg, 2)} |`
    )
  }
}

// checkTargets prints the seed's targets and whether this run met them.
function checkTargets(rows) {
  const get = (size, kind, raw) => rows.find((r) => r.payload === size && r.kind === kind && (r.lane === 'raw') === raw)
  const lines = []
  let ok = true
  const check = (what, pass) => {
    lines.push(`${pass ? 'met' : 'NOT MET'}: ${what}`)
    ok = ok && pass
  }
  for (const [size, ratio] of [
    [1000, 3],
    [100000, 10],
  ]) {
    const r = get(size, 'tell', true)
    const l = get(size, 'tell', false)
    check(`raw-lane sender JS time at ${size / 1000} kB at most 1/${ratio} of the legacy lane's (${r.jsUs.toFixed(1)} vs ${l.jsUs.toFixed(1)} µs, 1/${(l.jsUs / r.jsUs).toFixed(1)})`, r.jsUs * ratio <= l.jsUs)
  }
  const rawRows = rows.filter((r) => r.lane === 'raw')
  check(`0 pending timers after every raw-lane burst (${rawRows.map((r) => r.timers).join(', ')})`, rawRows.every((r) => r.timers === 0))
  const overhead = rawRows.filter((r) => r.kind === 'tell').map((r) => r.wireBytes - r.payload)
  check(`raw-lane wire bytes = payload + a fixed header (${overhead.join(', ')} B over the payload)`, overhead.every((o) => o === overhead[0]))
  check(`0 base64/JSON operations per raw-lane message (${rawRows.map((r) => r.opsPerMsg).join(', ')})`, rawRows.every((r) => r.opsPerMsg === 0))
  console.log('\n' + lines.join('\n'))
  return ok
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
