// SPDX-License-Identifier: MIT
pragma solidity 0.8.24;

// A membership contract for courier's tests with the ABI of The Waku
// Network's membership contract (waku-rlnv2-contract, src/WakuRlnV2.sol and
// src/Membership.sol): the same functions, events and errors that nodes call
// and watch, with the same rules for rate limits, deposits, expiry and the
// Merkle tree, so that courier's chain client is tested against the real
// interface. It leaves out what only the deployment needs: it is not an
// upgradeable proxy (no initialize, upgradeTo or ownership transfer) and
// takes its settings in the constructor.

import { LazyIMT, LazyIMTData } from "@zk-kit/lazy-imt.sol/LazyIMT.sol";
import { PoseidonT3 } from "poseidon-solidity/PoseidonT3.sol";
import { IERC20 } from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import { SafeERC20 } from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

import { IPriceCalculator } from "./LinearPriceCalculator.sol";

error DuplicateIdCommitment();
error InvalidIdCommitment(uint256 idCommitment);
error InvalidPaginationQuery(uint256 startIndex, uint256 endIndex);
error InvalidMembershipRateLimit();
error CannotExceedMaxTotalRateLimit();
error CannotExtendNonGracePeriodMembership(uint256 idCommitment);
error NonHolderCannotExtend(uint256 idCommitment);
error CannotEraseActiveMembership(uint256 idCommitment);
error NonHolderCannotEraseGracePeriodMembership(uint256 idCommitment);
error MembershipDoesNotExist(uint256 idCommitment);

contract RlnMembership {
    using SafeERC20 for IERC20;

    /// The BN254 scalar field modulus: an id commitment must lie in (0, Q).
    uint256 public constant Q =
        21888242871839275222246405745257275088548364400416034343698204186575808495617;

    /// Depth of the tree of rate commitments (the RLN circuit's depth).
    uint8 public constant MERKLE_TREE_DEPTH = 20;

    struct MembershipInfo {
        uint256 depositAmount;
        uint32 activeDuration;
        uint256 gracePeriodStartTimestamp;
        uint32 gracePeriodDuration;
        uint32 rateLimit;
        uint32 index;
        address holder;
        address token;
    }

    event MembershipRegistered(uint256 idCommitment, uint256 membershipRateLimit, uint32 index);
    event MembershipExpired(uint256 idCommitment, uint32 membershipRateLimit, uint32 index);
    event MembershipErased(uint256 idCommitment, uint32 membershipRateLimit, uint32 index);
    event MembershipExtended(
        uint256 idCommitment, uint32 membershipRateLimit, uint32 index, uint256 newGracePeriodStartTimestamp
    );

    address public owner;
    IPriceCalculator public priceCalculator;
    uint32 public maxTotalRateLimit;
    uint32 public maxMembershipRateLimit;
    uint32 public minMembershipRateLimit;
    uint32 public activeDurationForNewMemberships;
    uint32 public gracePeriodDurationForNewMemberships;
    uint256 public currentTotalRateLimit;
    uint32 public nextFreeIndex;
    uint32 public MAX_MEMBERSHIP_SET_SIZE;
    uint32 public deployedBlockNumber;

    mapping(address holder => mapping(address token => uint256 balance)) public depositsToWithdraw;
    mapping(uint256 idCommitment => MembershipInfo membership) public memberships;
    uint32[] public indicesOfLazilyErasedMemberships;

    LazyIMTData public merkleTree;

    modifier onlyOwner() {
        require(msg.sender == owner, "caller is not the owner");
        _;
    }

    constructor(
        address _priceCalculator,
        uint32 _maxTotalRateLimit,
        uint32 _minMembershipRateLimit,
        uint32 _maxMembershipRateLimit,
        uint32 _activeDuration,
        uint32 _gracePeriod
    ) {
        require(_minMembershipRateLimit <= _maxMembershipRateLimit);
        require(_maxMembershipRateLimit <= _maxTotalRateLimit);
        require(_activeDuration > 0);
        owner = msg.sender;
        priceCalculator = IPriceCalculator(_priceCalculator);
        maxTotalRateLimit = _maxTotalRateLimit;
        minMembershipRateLimit = _minMembershipRateLimit;
        maxMembershipRateLimit = _maxMembershipRateLimit;
        activeDurationForNewMemberships = _activeDuration;
        gracePeriodDurationForNewMemberships = _gracePeriod;
        MAX_MEMBERSHIP_SET_SIZE = uint32(1 << MERKLE_TREE_DEPTH);
        deployedBlockNumber = uint32(block.number);
        LazyIMT.init(merkleTree, MERKLE_TREE_DEPTH);
    }

    // ---- views ----

    function isValidIdCommitment(uint256 idCommitment) public pure returns (bool) {
        return idCommitment != 0 && idCommitment < Q;
    }

    function isValidMembershipRateLimit(uint32 rateLimit) public view returns (bool) {
        return rateLimit >= minMembershipRateLimit && rateLimit <= maxMembershipRateLimit;
    }

    function isInMembershipSet(uint256 idCommitment) public view returns (bool) {
        return memberships[idCommitment].rateLimit != 0;
    }

    /// Returns (rate limit, index, rate commitment), all zero for an unknown id commitment.
    function getMembershipInfo(uint256 idCommitment) public view returns (uint32, uint32, uint256) {
        MembershipInfo memory m = memberships[idCommitment];
        if (m.rateLimit == 0) return (0, 0, 0);
        return (m.rateLimit, m.index, _leaf(m.index));
    }

    function getRateCommitmentsInRangeBoundsInclusive(uint32 startIndex, uint32 endIndex)
        public
        view
        returns (uint256[] memory)
    {
        if (startIndex > endIndex || endIndex >= nextFreeIndex) revert InvalidPaginationQuery(startIndex, endIndex);
        uint256[] memory out = new uint256[](endIndex - startIndex + 1);
        for (uint32 i = startIndex; i <= endIndex; i++) {
            out[i - startIndex] = _leaf(i);
        }
        return out;
    }

    function root() external view returns (uint256) {
        return LazyIMT.root(merkleTree, MERKLE_TREE_DEPTH);
    }

    /// The siblings of leaf `index` from the leaves up, MERKLE_TREE_DEPTH of them.
    function getMerkleProof(uint40 index) public view returns (uint256[MERKLE_TREE_DEPTH] memory path) {
        uint256[] memory siblings = LazyIMT.merkleProofElements(merkleTree, index, MERKLE_TREE_DEPTH);
        for (uint8 i = 0; i < MERKLE_TREE_DEPTH; i++) {
            path[i] = siblings[i];
        }
    }

    function isInGracePeriod(uint256 idCommitment) public view returns (bool) {
        MembershipInfo memory m = memberships[idCommitment];
        return block.timestamp >= m.gracePeriodStartTimestamp
            && block.timestamp < m.gracePeriodStartTimestamp + uint256(m.gracePeriodDuration);
    }

    function isExpired(uint256 idCommitment) public view returns (bool) {
        return block.timestamp >= membershipExpirationTimestamp(idCommitment);
    }

    function membershipExpirationTimestamp(uint256 idCommitment) public view returns (uint256) {
        MembershipInfo memory m = memberships[idCommitment];
        return m.gracePeriodStartTimestamp + uint256(m.gracePeriodDuration);
    }

    // ---- registration ----

    /// Registers idCommitment with rateLimit messages per epoch, taking the
    /// deposit the price calculator asks for (the caller must have approved
    /// it), after erasing the expired memberships in idCommitmentsToErase.
    function register(uint256 idCommitment, uint32 rateLimit, uint256[] calldata idCommitmentsToErase) external {
        if (!isValidIdCommitment(idCommitment)) revert InvalidIdCommitment(idCommitment);
        require(!isInMembershipSet(idCommitment), "Duplicate idCommitment: membership already exists");
        require(nextFreeIndex < MAX_MEMBERSHIP_SET_SIZE, "Membership set is full");
        _erase(idCommitmentsToErase, false);

        if (!isValidMembershipRateLimit(rateLimit)) revert InvalidMembershipRateLimit();
        currentTotalRateLimit += rateLimit;
        if (currentTotalRateLimit > maxTotalRateLimit) revert CannotExceedMaxTotalRateLimit();
        (address token, uint256 deposit) = priceCalculator.calculate(rateLimit);

        uint32 index;
        bool reused;
        uint256 free = indicesOfLazilyErasedMemberships.length;
        if (free > 0) {
            index = indicesOfLazilyErasedMemberships[free - 1];
            indicesOfLazilyErasedMemberships.pop();
            reused = true;
        } else {
            index = nextFreeIndex;
        }
        memberships[idCommitment] = MembershipInfo({
            depositAmount: deposit,
            activeDuration: activeDurationForNewMemberships,
            gracePeriodStartTimestamp: block.timestamp + uint256(activeDurationForNewMemberships),
            gracePeriodDuration: gracePeriodDurationForNewMemberships,
            rateLimit: rateLimit,
            index: index,
            holder: msg.sender,
            token: token
        });
        IERC20(token).safeTransferFrom(msg.sender, address(this), deposit);

        uint256 rateCommitment = PoseidonT3.hash([idCommitment, uint256(rateLimit)]);
        if (reused) {
            LazyIMT.update(merkleTree, rateCommitment, index);
        } else {
            LazyIMT.insert(merkleTree, rateCommitment);
            nextFreeIndex += 1;
        }
        emit MembershipRegistered(idCommitment, rateLimit, index);
    }

    function extendMemberships(uint256[] calldata idCommitments) external {
        for (uint256 i = 0; i < idCommitments.length; i++) {
            uint256 id = idCommitments[i];
            MembershipInfo storage m = memberships[id];
            if (!isInGracePeriod(id)) revert CannotExtendNonGracePeriodMembership(id);
            if (m.holder != msg.sender) revert NonHolderCannotExtend(id);
            m.gracePeriodStartTimestamp += uint256(m.gracePeriodDuration) + uint256(m.activeDuration);
            emit MembershipExtended(id, m.rateLimit, m.index, m.gracePeriodStartTimestamp);
        }
    }

    function eraseMemberships(uint256[] calldata idCommitments) external {
        _erase(idCommitments, false);
    }

    /// With eraseFromMembershipSet, the leaves are also set to zero (the root changes).
    function eraseMemberships(uint256[] calldata idCommitments, bool eraseFromMembershipSet) external {
        _erase(idCommitments, eraseFromMembershipSet);
    }

    function withdraw(address token) external {
        require(token != address(0), "ETH is not allowed");
        uint256 amount = depositsToWithdraw[msg.sender][token];
        require(amount > 0, "Insufficient deposit balance");
        depositsToWithdraw[msg.sender][token] = 0;
        IERC20(token).safeTransfer(msg.sender, amount);
    }

    // ---- owner settings ----

    function setPriceCalculator(address _priceCalculator) external onlyOwner {
        priceCalculator = IPriceCalculator(_priceCalculator);
    }

    function setMaxTotalRateLimit(uint32 v) external onlyOwner {
        require(maxMembershipRateLimit <= v);
        maxTotalRateLimit = v;
    }

    function setMaxMembershipRateLimit(uint32 v) external onlyOwner {
        require(minMembershipRateLimit <= v);
        maxMembershipRateLimit = v;
    }

    function setMinMembershipRateLimit(uint32 v) external onlyOwner {
        require(v > 0 && v <= maxMembershipRateLimit);
        minMembershipRateLimit = v;
    }

    function setActiveDuration(uint32 v) external onlyOwner {
        require(v > 0);
        activeDurationForNewMemberships = v;
    }

    function setGracePeriodDuration(uint32 v) external onlyOwner {
        gracePeriodDurationForNewMemberships = v;
    }

    // ---- internals ----

    function _leaf(uint32 index) internal view returns (uint256) {
        return merkleTree.elements[LazyIMT.indexForElement(0, index)];
    }

    /// Erases expired memberships, or grace-period ones of the sender; the
    /// deposit becomes withdrawable by the holder and the index reusable.
    function _erase(uint256[] calldata ids, bool fromTree) internal {
        for (uint256 i = 0; i < ids.length; i++) {
            uint256 id = ids[i];
            MembershipInfo memory m = memberships[id];
            if (m.rateLimit == 0) revert MembershipDoesNotExist(id);
            bool expired = isExpired(id);
            bool grace = isInGracePeriod(id);
            if (!expired && !grace) revert CannotEraseActiveMembership(id);
            if (grace && m.holder != msg.sender) revert NonHolderCannotEraseGracePeriodMembership(id);

            depositsToWithdraw[m.holder][m.token] += m.depositAmount;
            currentTotalRateLimit -= m.rateLimit;
            indicesOfLazilyErasedMemberships.push(m.index);
            delete memberships[id];
            if (expired) emit MembershipExpired(id, m.rateLimit, m.index);
            emit MembershipErased(id, m.rateLimit, m.index);
            if (fromTree) LazyIMT.update(merkleTree, 0, m.index);
        }
    }
}
