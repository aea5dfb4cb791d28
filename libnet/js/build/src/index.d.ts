import {
  AppHeader,
  GetSenderAddressResult,
  ListenerResponder,
  RawHeader,
  RawSendOpts,
  RemoteSender,
  ResponseCallback,
  Sign,
  SnOpts,
  TimeoutCallback,
} from './types'

export declare let logFlags: { net_verbose: boolean; net_stats: boolean; net_rust: boolean }
export declare const getSenderAddress: (raw_tx: string) => GetSenderAddressResult
export declare const goRuntime: (
  maxProcs?: number,
  memoryLimit?: number
) => { maxProcs: number; memoryLimit: number; numCPU: number; goVersion: string }
export declare const Sn: (opts: SnOpts) => {
  send: (port: number, address: string, data: unknown, timeout?: number, onResponse?: ResponseCallback, onTimeout?: TimeoutCallback) => Promise<void>
  sendWithHeader: (port: number, address: string, data: unknown, header: AppHeader, timeout?: number, onResponse?: ResponseCallback, onTimeout?: TimeoutCallback) => Promise<void>
  multiSendWithHeader: (ports: number[], addresses: string[], data: unknown, header: AppHeader, timeout?: number, onResponse?: ResponseCallback, onTimeout?: TimeoutCallback, awaitProcessing?: boolean) => Promise<void>
  listen: (handleData: (data: unknown, remote: RemoteSender, respond: ListenerResponder, header?: AppHeader | undefined, sign?: Sign | undefined) => void) => Promise<any>
  stopListening: (server?: any) => any
  stats: () => any
  evictSocket: (port: number, address: string) => any
  updateHeaderOpts: (opts: { sendHeaderVersion: number }) => void
  setLogFlags: (setLogFlags: any) => void
  tellRaw: (port: number, address: string, payload: Uint8Array, opts?: RawSendOpts) => Promise<void>
  multiTellRaw: (ports: number[], addresses: string[], payload: Uint8Array, opts?: RawSendOpts) => Promise<(Error | null)[]>
  askRaw: (port: number, address: string, payload: Uint8Array, opts?: RawSendOpts) => Promise<{ payload: Buffer; header: { sender_id: string; route: string } }>
  listenRaw: (handler: (header: RawHeader, payload: Buffer, respond: (reply: Uint8Array) => Promise<void>) => void) => void
  allowRaw: (port: number, address: string, on?: boolean) => void
}
